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


def test_the_suites_stream_measures_memory_as_stream_does():
    """The quick start ran 2^22 doubles for 10 iterations: the L3 of the node, reported as memory."""
    from clusterbench.bench.suite import SUITE

    step = next(e for e in SUITE if "stream" in e.name)
    cpu, gpu = step.config_for("cpu"), step.config_for("cuda")
    assert cpu.sizes == () and cpu.numtimes == 100      # the default: 2^25 or 4x the cache
    assert min(gpu.sizes) >= 1 << 25 and gpu.numtimes == 100
