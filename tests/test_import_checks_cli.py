"""What an import's checks leave with a run is shown by ``results show`` and ``validate``:
warnings (rows missing, implausible figures), and old nccl-tests' error column judged against
nccl-tests' own tolerance (issues 15 and 18)."""

from pathlib import Path

import pytest
from json_schema import check_lines

from clusterbench.cli import main
from clusterbench.families.collectives.spec import error_tolerance

DATA = Path(__file__).parent / "data"
WOHLBIER = DATA / "nccl-tests" / "wohlbier-dgx2-v100-5-collectives-old-error-column-running-lines.txt"
PKB = DATA / "nccl-tests" / "pkb-2019-v100-2node-old-error-column-nccl-2.4.6.txt"


def cli(capsys, *argv):
    with pytest.raises(SystemExit) as e:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "r.db")


def profile(tmp_path, benchmark):
    p = tmp_path / "p.yaml"
    p.write_text(f"name: t\ncriteria:\n  - {{name: busbw, benchmark: {benchmark}, metric: busbw, op: '>=', "
                 "value: 0.001, unit: GB/s, aggregate: max}\n")
    return str(p)


def test_results_show_prints_the_warnings(capsys, db):
    cli(capsys, "import", str(DATA / "nccl-tests" / "coreweave-kubectl-logs-minbytes4-rows-elided-start-512M.txt"),
        "--db", db)
    rc, out, _ = cli(capsys, "results", "show", "1", "--db", db)
    assert rc == 0 and "# run 1: import (incomplete)" in out
    assert ("# warning: the header promises 30 sizes 4..2147483648 per table; the float sum table shows 5 "
            "(536870912..8589934592)") in out.splitlines()


def test_validate_prints_the_warnings(capsys, db, tmp_path):
    cli(capsys, "import", str(DATA / "hipblaslt-bench" / "issue251-2023-gfx906-unsupported-warning-bogus-gflops-v1.txt"),
        "--db", db)
    p = tmp_path / "gemm.yaml"
    p.write_text("name: g\ncriteria:\n  - {name: tflops, benchmark: gemm, metric: tflops, op: '>=', value: 1,"
                 " unit: TFLOP/s}\n")
    rc, out, _ = cli(capsys, "validate", "1", "--profile", str(p), "--db", db)
    assert rc == 0   # the figure passes the profile, but the user is told it is not believable
    assert any(line.startswith("# warning: run 1: implausible GEMM figure: 2048x2048x2048 fp32 at 2728 TFLOP/s")
               for line in out.splitlines())
    rc, out, _ = cli(capsys, "validate", "1", "--profile", str(p), "--db", db, "--json")
    warnings = [x for x in check_lines(out) if x["kind"] == "warning"]
    assert [w["run"] for w in warnings] == [1, 1] and warnings[1]["text"].startswith("implausible GEMM")


def test_old_error_column_above_tolerance_fails_show_and_validate(capsys, db, tmp_path):
    cli(capsys, "import", str(WOHLBIER), "--db", db)   # all_gather is run 1
    rc, out, _ = cli(capsys, "results", "show", "1", "--db", db)
    assert "  4294967280      89478485     float    none      -1    53902     N/A   73.04  1e+00" in out
    assert ("# Max error above nccl-tests' tolerance on 4 rows (worst 1 at 4294967280 B, tolerance 0.00011): "
            "FAILED") in out
    rc, out, _ = cli(capsys, "validate", "1", "--profile", profile(tmp_path, "all_gather"), "--db", db)
    assert rc == 1
    line = next(x for x in out.splitlines() if "max error within nccl-tests' tolerance" in x)
    assert line.startswith("FAIL") and "<= 0.00011" in line and "4 of 62 rows above it" in line


def test_old_error_column_within_tolerance_passes(capsys, db, tmp_path):
    cli(capsys, "import", str(PKB), "--db", db)
    rc, out, _ = cli(capsys, "results", "show", "1", "--db", db)
    assert "           8             2     float     sum      -1    58.10    0.00    0.00  4e-07" in out
    assert "Max error above" not in out and "# Out of bounds values : 0 OK" in out
    rc, out, _ = cli(capsys, "validate", "1", "--profile", profile(tmp_path, "all_reduce"), "--db", db)
    assert rc == 0 and next(x for x in out.splitlines() if "nccl-tests' tolerance" in x).startswith("PASS")


def test_tolerance_is_nccl_tests_delta_max_times_ranks_minus_one():
    assert error_tolerance("float", 16) == pytest.approx(1.5e-4)
    assert error_tolerance("half", 2) == 1e-2 and error_tolerance("double", 3) == 2e-12
    assert error_tolerance("int32", 8) == pytest.approx(7e-200)   # integers: any error fails
    assert error_tolerance("float", 1) == 0 and error_tolerance("float", 0) is None
