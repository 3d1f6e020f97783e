"""Tests of clusterbench.bench.suite: the default suite."""

from __future__ import annotations

from clusterbench.families.collectives.spec import OPS


def test_default_suite_is_a_list_of_importable_steps():
    import pickle

    from clusterbench.bench.suite import SUITE, SuiteEntry

    assert SUITE and all(isinstance(e, SuiteEntry) for e in SUITE)
    for entry in SUITE:
        assert callable(entry.target)
        assert pickle.loads(pickle.dumps(entry)) == entry
    coll = next(e for e in SUITE if e.name == "collectives")
    assert set(coll.config_for("cpu").ops) == set(OPS)
    assert coll.config_for("cpu").maxbytes <= 1 << 20          # small enough for ~20 s on 2 CPU ranks
    assert coll.config_for("cuda").maxbytes > coll.config_for("cpu").maxbytes
