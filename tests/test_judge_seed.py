"""The MI300X validation guide's own tool output, imported, judged against its own tables."""

from pathlib import Path

import pytest
from judge_helpers import cli, json_lines

ingest = pytest.importorskip("clusterbench.ingest", reason="log importers not available")

DATA = Path(__file__).parent / "data"
SEED_LOGS = [
    ("nccl-tests", "seed-mi300x-rccl-all_reduce-8gpu.txt"),
    ("transferbench", "seed-mi300x-a2a.txt"),
    ("transferbench", "seed-mi300x-p2p.txt"),
    ("transferbench", "seed-mi300x-example-cfg.txt"),
    ("rocblas-bench", "seed-mi300x-sgemm-4000.txt"),
    ("rocblas-bench", "seed-mi300x-gemm_strided_batched_ex-bf16.txt"),
    ("rocblas-bench", "seed-mi300x-gemm_strided_batched_ex-int8.txt"),
    ("babelstream", "seed-mi300x-hip-8gpu-mpi.txt"),
]

# What Tables 1-6 imply for the outputs printed next to them. Test 2 of Table 3 fails by 0.1%:
# the guide's example shows 48.349 GB/s against a 48.4 GB/s minimum (it notes its examples are
# not the runs behind the tables).
EXPECTED = {
    "TransferBench a2a average bandwidth": ("pass", 35.776),
    "TransferBench p2p average unidirectional copy GPU->GPU": ("pass", 48.44),
    "TransferBench p2p average bidirectional copy GPU<->GPU": ("pass", 46.24),
    "TransferBench config Test 1 (GFX G0->G1, 4 CUs)": ("pass", 47.774),
    "TransferBench config Test 2 (DMA G0->G1)": ("fail", 48.349),
    "TransferBench config Test 3, 0 to 1": ("pass", 32.809),
    "TransferBench config Test 3, 1 to 0": ("pass", 39.603),
    "TransferBench config Test 4 (memset G0)": ("pass", 1274.598),
    "TransferBench config Test 6 (broadcast G0 -> G0,G1)": ("pass", 48.933),
    "RCCL all_reduce in-place busbw at 8 GiB": ("pass", 315.84),
    "rocBLAS FP32 GEMM 4000x4000x4000": ("pass", 97.1906),
    "rocBLAS strided batched BF16 GEMM 1024x2048x512, batch 5": ("pass", 159.783),
    "rocBLAS strided batched INT8 GEMM 1024x2048x512, batch 5": ("pass", 177.478),
    "BabelStream Copy": ("pass", 4255.995148),
    "BabelStream Mul": ("pass", 4113.642067),
    "BabelStream Add": ("pass", 3948.620619),
    "BabelStream Triad": ("pass", 3947.212603),
    "BabelStream Dot": ("pass", 3878.410495),
}


@pytest.fixture
def seed_db(db):
    from clusterbench.store import Store

    with Store.open(db) as store:
        for tool, fname in SEED_LOGS:
            text = (DATA / tool / fname).read_text()
            for imported in ingest.parse_text(text, tool=tool, name=fname):
                imported.run.tags["seed"] = "mi300x"
                store.save_run(imported.run, imported.measurements)
    return db


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
