"""Tests of clusterbench.families.stream.spec: memory bandwidth (BabelStream's kernels) as data."""

from __future__ import annotations

import pytest
from stream_facts import ARRAYS

from clusterbench.families.stream import spec


def test_kernel_table_matches_babelstream():
    # BabelStream's counts; Nstream runs as two passes in PyTorch and counts the 6 arrays they move
    assert {k.name: k.arrays for k in spec.KERNELS} == ARRAYS
    assert spec.bytes_moved("triad", 2**25, 8) == 3 * 8 * 2**25
    # BabelStream v3.3 TITAN Xp row: Triad 436491.299 MB/s at 0.00184 s, 2^25 doubles.
    assert spec.bandwidth_gbs("Triad", 2**25, 8, 0.00184) == pytest.approx(437.6, rel=1e-3)
    assert spec.ordered(["dot", "COPY", "triad"]) == ["Copy", "Triad", "Dot"]
    with pytest.raises(KeyError):
        spec.kernel("Scale")


def test_the_default_size_is_babelstreams_or_four_times_the_cache():
    assert spec.default_array_size(None, 8) == spec.default_array_size(32 << 20, 8) == 1 << 25
    # an EPYC with 384 MiB of L3: 4x is 192 Mi doubles, rounded up to a power of two
    assert spec.default_array_size(384 << 20, 8) == 1 << 28
    assert spec.default_array_size(64 << 20, 8) == 1 << 25 and spec.default_array_size(65 << 20, 8) == 1 << 26
    assert spec.default_array_size(64 << 20, 4) == 1 << 26   # float: twice the elements for the same bytes


def test_a_size_is_labelled_by_where_its_traffic_lands():
    llc = 32 << 20
    assert spec.memory_level(1 << 24, 8, llc) == "main"      # 128 MiB per array: 4x the cache
    assert spec.memory_level(1 << 22, 8, llc) == "mixed"     # the quick start's old 2^22: 1x
    assert spec.memory_level(1 << 20, 8, llc) == "cache"     # 3 x 8 MiB inside 32 MiB
    assert spec.memory_level(1 << 20, 8, None) is None
