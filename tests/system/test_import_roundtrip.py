"""The round trip of every real log in tests/data: imported, printed by ``results show`` and
imported again, it gives the same records. For nccl-tests and rccl-tests runs the text that
``results show`` prints is nccl-tests' table, which the importer reads back; for every run of
every tool, ``results show --json`` prints clusterbench's JSON lines, which it reads back too.
(Other families' text tables are clusterbench's own layout, not a tool's: no importer reads them.)

Also: every nccl/rccl table's stored average busbw is the mean of its stored busbw values, or
the run says why not (rows missing)."""

import contextlib
import io
import json
from collections import Counter
from pathlib import Path

import pytest

from clusterbench.cli import main
from clusterbench.ingest import LogFormatError, parse_text

DATA = Path(__file__).parent.parent / "data"
TOOLS = ("babelstream", "hipblaslt-bench", "iperf3", "nccl-tests", "osu", "perftest", "rocblas-bench", "stream",
         "transferbench", "vllm-serving")
LOGS = sorted(p for tool in TOOLS for p in (DATA / tool).iterdir() if p.is_file() and p.name != "README.md")
COLLECTIVE_TOOLS = ("nccl-tests", "rccl-tests")


def _cli(args: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code in (0, 1), out.getvalue()[-500:]
    return out.getvalue()


def records(runs) -> Counter:
    return Counter((m.benchmark, m.metric, repr(float(m.value)), m.unit, json.dumps(m.params, sort_keys=True))
                   for r in runs for m in r.measurements)


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """Each log's runs as parsed, and as stored (its run ids in a database of its own)."""
    found = {}
    for path in LOGS:
        try:
            runs = parse_text(path.read_text(encoding="utf-8", errors="replace"), name=path.name)
        except LogFormatError as e:   # the logs kept to test a refusal
            found[path.name] = (str(e), None)
            continue
        db = str(tmp_path_factory.mktemp("rt") / "r.db")
        with contextlib.redirect_stderr(io.StringIO()):
            _cli(["import", str(path), "--db", db])
        found[path.name] = (runs, db)
    return found


def _runs(imported, name):
    runs, db = imported[name]
    if db is None:
        pytest.skip(f"refused: {runs[:80]}")
    return runs, db


@pytest.mark.parametrize("name", [p.name for p in LOGS])
def test_json_lines_of_results_show_read_back_as_the_same_runs(imported, name):
    runs, db = _runs(imported, name)
    for i, r in enumerate(runs, 1):
        (again,) = parse_text(_cli(["results", "show", str(i), "--db", db, "--json"]), name="show.jsonl")
        assert records([again]) == records([r])
        assert (again.run.status, again.run.ranks, again.run.errors) == (r.run.status, r.run.ranks, r.run.errors)


@pytest.mark.parametrize("name", [p.name for p in LOGS if p.parent.name == "nccl-tests"])
def test_the_table_results_show_prints_reads_back_as_the_same_records(imported, name):
    runs, db = _runs(imported, name)
    for i, r in enumerate(runs, 1):
        if not r.measurements:   # a run that died before its table: shown as clusterbench's '# no measurements'
            continue
        text = _cli(["results", "show", str(i), "--db", db])
        # read under a name that names no op: the table's own lines must carry everything
        again = parse_text(text, name="show.txt")
        assert records(again) == records([r]), text[:2000]
        (back,) = again
        assert back.run.ranks == r.run.ranks and back.run.meta["op"] == r.run.meta["op"]
        assert back.run.status == r.run.status


@pytest.mark.parametrize("name", [p.name for p in LOGS if p.parent.name == "nccl-tests"])
def test_every_stored_average_is_its_rows_mean_or_flagged(imported, name):
    runs, _ = _runs(imported, name)
    for r in runs:
        assert r.run.meta["tool"] in COLLECTIVE_TOOLS
        avg = [m.value for m in r.measurements if m.metric == "avg_busbw"]
        bus = [m.value for m in r.measurements if m.metric == "busbw"]
        if not avg or not bus:
            continue
        if "rows_missing" in r.run.meta:
            assert r.run.status == "incomplete" and any("footer" in w or "promises" in w
                                                        for w in r.run.meta["warnings"])
            continue
        # each busbw printed with 2 decimals (+-0.005), the average with %g
        assert abs(sum(bus) / len(bus) - avg[0]) <= max(0.01 * abs(avg[0]), 0.01), (name, avg[0])
