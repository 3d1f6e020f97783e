"""Tests of clusterbench.collector: the garbage collector paused for a block."""

import gc

import pytest

from clusterbench import collector


def test_the_collector_is_off_in_the_block_and_as_it_was_after() -> None:
    was = gc.isenabled()
    try:
        gc.enable()
        with collector.paused():
            assert not gc.isenabled()
            with collector.paused():   # nested: the inner block leaves it off for the outer
                pass
            assert not gc.isenabled()
        assert gc.isenabled()
        with pytest.raises(RuntimeError), collector.paused():
            raise RuntimeError("a block that fails")
        assert gc.isenabled()
        gc.disable()   # off before: it stays off
        with collector.paused():
            pass
        assert not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


def test_a_cycle_made_while_paused_is_collected_after() -> None:
    import weakref

    class Node:
        pass

    with collector.paused():
        a, b = Node(), Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
        assert gone() is not None
    gc.collect()
    assert gone() is None
