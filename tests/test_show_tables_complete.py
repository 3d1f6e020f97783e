"""`results show` prints every stored measurement: the terminal table of each real log under
tests/data, imported into a fresh database, holds every value its ``--json`` form lists.

A table cell is compared at the precision it prints (``57.30`` is 57.295 .. 57.305, ``1e+00``
one significant digit); a nonzero value never prints as 0, and rows with the same params that a
tool printed twice are both shown. Each measurement takes a cell of its own, so two values that
are the same number need two cells.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
from pathlib import Path

import pytest

from clusterbench.cli import main

DATA = Path(__file__).parent / "data"
SKIP_DIRS = {"golden", "schemas", "sysfs"}
LOGS = sorted(p for p in DATA.rglob("*") if p.is_file() and p.name != "README.md"
              and p.relative_to(DATA).parts[0] not in SKIP_DIRS)

# A number standing alone in a table: not the digit of a name (G0, cuda:0, x8192) or a version.
_NUMBER = re.compile(r"(?<![A-Za-z_\d.:])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\d.]|[A-Za-z_]\d)")


def cli(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(list(argv))
        except SystemExit:
            pass
    return out.getvalue()


def import_log(path: Path, db: str) -> list[int]:
    lines = cli("import", str(path), "--db", db, "--json").splitlines()
    records = [json.loads(line) for line in lines if line.startswith("{")]
    summary = next(r for r in records if r.get("kind") == "summary")
    return list(summary["runs"])


def shown(run: int, db: str) -> tuple[str, list[dict]]:
    text = cli("results", "show", str(run), "--db", db)
    records = [json.loads(line) for line in cli("results", "show", str(run), "--db", db, "--json").splitlines()
               if line.startswith("{")]
    return text, [r for r in records if r.get("kind") == "measurement"]


def cells(text: str) -> list[str]:
    """Every number the table prints, run header lines (ranks, pids, devices) left out."""
    out = []
    for line in text.splitlines():
        if line.startswith(("# run ", "# source:", "# command", "#  Rank ")):
            continue
        out += _NUMBER.findall(line)
    return out


def matches(value: float, cell: str) -> bool:
    """``cell`` is ``value`` as printed at the cell's precision (%f decimals or %g digits)."""
    printed = float(cell)
    if value != 0 and printed == 0:
        return False  # a nonzero value printed as 0 says nothing
    if not math.isfinite(value):
        return False
    mantissa, _, exponent = cell.lower().lstrip("+-").partition("e")
    if exponent:
        digits = len(mantissa.replace(".", "").lstrip("0")) or 1
        step = 10.0 ** (math.floor(math.log10(abs(printed))) - digits + 1) if printed else 10.0 ** int(exponent)
    else:
        decimals = len(mantissa.partition(".")[2])
        step = 10.0 ** -decimals
    return abs(value - printed) <= step / 2 * (1 + 1e-9) + abs(value) * 1e-12


def missing_values(text: str, measurements: list[dict]) -> list[dict]:
    """The measurements with no cell of their own in ``text`` (a cell serves one measurement:
    the ones with the fewest candidate cells choose first)."""
    table = cells(text)
    candidates = [[i for i, c in enumerate(table) if matches(m["value"], c)] for m in measurements]
    used: set[int] = set()
    missing = []
    for k in sorted(range(len(measurements)), key=lambda k: len(candidates[k])):
        free = next((i for i in candidates[k] if i not in used), None)
        if free is None:
            missing.append(measurements[k])
        else:
            used.add(free)
    return missing


def _shown_runs(path: Path, tmp_path: Path) -> list[tuple[str, list[dict]]]:
    db = str(tmp_path / "x.db")
    return [shown(run, db) for run in import_log(path, db)]


@pytest.mark.parametrize("path", LOGS, ids=[str(p.relative_to(DATA)) for p in LOGS])
def test_table_shows_every_stored_value(path, tmp_path):
    for text, measurements in _shown_runs(path, tmp_path):
        finite = [m for m in measurements if isinstance(m["value"], (int, float)) and math.isfinite(m["value"])]
        missing = missing_values(text, finite)
        assert not missing, (f"{len(missing)} of {len(finite)} values not in the table, e.g. "
                             f"{missing[:3]}\n{text}")


# -- one test per display bug found by comparing the tables with --json -------------------------

def _show(tool_file: str, tmp_path: Path) -> list[tuple[str, list[dict]]]:
    return _shown_runs(DATA / tool_file, tmp_path)


def test_nccl_rows_with_the_same_params_all_print_in_order(tmp_path):
    # 12 GPUs from -b 8: all_gather prints three rows of size 0, each with its own times
    (text, ms), *_ = _show("nccl-tests/wohlbier-dgx2-v100-5-collectives-old-error-column-running-lines.txt",
                           tmp_path)
    rows = [line.split() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    times = [m for m in ms if m["metric"] == "time_us" and m["params"]["placement"] == "out"]
    assert len(rows) == len(times) == 31
    assert [r[0] for r in rows[:4]] == ["0", "0", "0", "48"]
    assert [r[5] for r in rows[:3]] == [f"{m['value']:.2f}" for m in times[:3]]
    assert "57.30" in text and "57.12" in text


def test_gemm_import_shows_its_time_and_no_none_device(tmp_path):
    ((text, _),) = _show("rocblas-bench/seed-mi300x-sgemm-4000.txt", tmp_path)
    row = next(line for line in text.splitlines() if "4000" in line and not line.startswith("#"))
    assert row.split()[0] == "-" and row.split()[-1] == "1317.0"
    assert "None" not in text
    ((text, _),) = _show("hipblaslt-bench/doc-bench-freq-all-per-xcd-columns.txt", tmp_path / "b")
    assert "GB/s" in text.splitlines()[-1]


def test_transfer_a2a_labels_every_record(tmp_path):
    ((text, ms),) = _show("transferbench/seed-mi300x-a2a.txt", tmp_path)
    assert "None" not in text
    assert "aggregate (timing=gpu)" in text and "aggregate (timing=cpu)" in text
    actual = next(m for m in ms if m["params"].get("stat") == "row_actual" and m["params"]["src"] == "G0")
    g0 = next(line for line in text.splitlines() if line.startswith("  G0 "))
    assert g0.split()[-1] == f"{actual['value']:.2f}"
    ((text, _),) = _show("transferbench/seed-mi300x-p2p.txt", tmp_path / "p")
    averages = [line for line in text.splitlines() if line.lstrip().startswith("average")]
    assert len(averages) == len(set(averages)) == 8
    assert any("(src=C dst=G)" in line for line in averages)


def test_transfer_config_prints_times_as_times(tmp_path):
    ((text, _),) = _show("transferbench/docs-timing-config-example-v1.6x.txt", tmp_path)
    assert "77688.000 GB/s" not in text  # a wall time is no bandwidth
    assert "timing=cpu" in text


def test_net_small_values_and_sides(tmp_path):
    from clusterbench.families.net.table import NetTable
    from clusterbench.records import Measurement, Run

    p = {"src_host": "a", "dst_host": "b", "streams": 1}
    ms = [Measurement("net", "bandwidth", 0.000393, "GB/s", {**p, "side": "sender"}),
          Measurement("net", "bandwidth", 0.117, "GB/s", {**p, "side": "receiver"})]
    table = NetTable()
    rows = table.rows(ms)
    assert "0.000393" in rows[0] and "side=sender" in rows[0] and "side=receiver" in rows[1]
    assert "0.000 " not in rows[0]
    assert "min 0.000393" in table.footer(Run("net"), ms)[0]
    ((text, _),) = _show("iperf3/cloudpilot-10k_file-bytes-mode.json", tmp_path)
    assert "side=sent" in text and "side=received" in text
