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
