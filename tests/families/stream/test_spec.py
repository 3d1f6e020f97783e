"""Tests of clusterbench.families.stream.spec: memory bandwidth (BabelStream's kernels) as data."""

from __future__ import annotations

import pytest

from clusterbench.families.stream import spec


def test_kernel_table_matches_babelstream():
    # BabelStream's counts; Nstream runs as two passes in PyTorch and counts the 6 arrays they move
    assert {k.name: k.arrays for k in spec.KERNELS} == {
        "Copy": 2, "Mul": 2, "Add": 3, "Triad": 3, "Dot": 2, "Nstream": 6}
    assert spec.bytes_moved("triad", 2**25, 8) == 3 * 8 * 2**25
    # BabelStream v3.3 TITAN Xp row: Triad 436491.299 MB/s at 0.00184 s, 2^25 doubles.
    assert spec.bandwidth_gbs("Triad", 2**25, 8, 0.00184) == pytest.approx(437.6, rel=1e-3)
    assert spec.ordered(["dot", "COPY", "triad"]) == ["Copy", "Triad", "Dot"]
    with pytest.raises(KeyError):
        spec.kernel("Scale")
