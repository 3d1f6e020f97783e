"""The MI300X validation guide's own tool output, imported, judged against its own tables."""

from pathlib import Path

import pytest
from judge_helpers import EXPECTED, cli, json_lines

ingest = pytest.importorskip("clusterbench.ingest", reason="log importers not available")

DATA = Path(__file__).parent / "data"

def test_seed_outputs_against_amd_mi300x_oem(seed_db, capsys):
    rc, out, _ = cli(capsys, "validate", "seed=mi300x", "--profile", "amd-mi300x-oem", "--db", seed_db, "--json")
    res = {o["criterion"]: o for o in json_lines(out) if "criterion" in o}
    for name, (status, measured) in EXPECTED.items():
        assert res[name]["status"] == status, (name, res[name])
        assert res[name]["measured"] == pytest.approx(measured, rel=1e-6), name
    t2 = res["TransferBench config Test 2 (DMA G0->G1)"]
    assert t2["margin"] == pytest.approx(48.349 - 48.4) and t2["margin_pct"] == pytest.approx(-0.105, abs=1e-3)
    # GEMM thresholds are GFLOPS in the table: shown as the profile states them, compared as
    # 94.1 TFLOP/s (97.19 TFLOP/s passes; 97.19 against 94100 would fail)
    gemm = res["rocBLAS FP32 GEMM 4000x4000x4000"]
    assert gemm["threshold"] == ">= 94,100 GFLOP/s" and gemm["unit"] == "TFLOP/s"
    assert gemm["margin"] == pytest.approx(97.1906 - 94.1)
    # thresholds in the criterion's own unit, without exponent notation
    assert res["BabelStream Copy"]["threshold"] == ">= 4,177,285 MB/s"
    # only two GPUs' BabelStream output is in the guide: too few to look for a degraded one
    assert res["no degraded GPU in BabelStream Triad"]["status"] == "skipped"
    assert rc == 1  # Test 2 fails


def test_seed_table_output_and_single_family(seed_db, capsys):
    rc, out, _ = cli(capsys, "validate", "seed=mi300x", "--profile", "amd-mi300x-oem", "--db", seed_db)
    assert rc == 1
    assert "FAIL     TransferBench config Test 2 (DMA G0->G1)" in out
    assert "# 17 pass, 1 fail, 1 skipped, 0 error" in out
    assert ">= 4,177,285 MB/s" in out and "e+0" not in out
    # device results as percent of the datasheet peak (MI300X HBM3: 5.3 TB/s)
    assert "# peak stream Copy: best 4269 GB/s = 80.5% of AMD Instinct MI300X datasheet 5300 GB/s" in out
    # the RCCL run alone passes: everything else is skipped, exit 0
    rc, out, _ = cli(capsys, "validate", "1", "--profile", "amd-mi300x-oem", "--db", seed_db)
    assert rc == 0 and "# 1 pass, 0 fail, 18 skipped, 0 error" in out
