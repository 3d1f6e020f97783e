"""Issue 18: text from a run or a log reaches a terminal with its control characters escaped.

A run is stored whose tag, note, host, device, error and params hold an ESC sequence (clear the
screen), a carriage return, a newline that would forge a line, a bidi override and a lone
surrogate; every command that prints such a run as text must show them as escapes, and the
``--json`` output must keep them exactly.
"""

from __future__ import annotations

import json

import pytest

from clusterbench.cli import main
from clusterbench.families import FAMILIES, renderer_for
from clusterbench.printable import printable
from clusterbench.records import Measurement, Run
from clusterbench.report.terminal import render_run
from clusterbench.store import Store

ESC = "\x1b[2J\x1b]0;pwned\x07"
EVIL = f"a{ESC}b\rFAKE\nPASS\u202eevil\x9b31m"
RAW = ("\x1b", "\r", "\x07", "\u202e", "\x9b")


def _cb(capsys, argv: list[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(argv)
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def _clean(text: str) -> None:
    for ch in RAW:
        assert ch not in text, f"{ch!r} printed raw:\n{text!r}"


def test_printable_escapes_and_leaves_plain_text_alone():
    assert printable("plain text, 41.2 GB/s") == "plain text, 41.2 GB/s"
    assert printable("a\x1b[31mb") == "a\\x1b[31mb"
    assert printable("x\ny\rz\t") == "x\\ny\\rz\\t"
    assert printable("\u202edcba\x9b\x7f\udcff") == "\\u202edcba\\x9b\\x7f\\udcff"
    assert printable("Größe µs") == "Größe µs"          # ordinary non-ASCII text stays
    assert printable(printable(EVIL + "\udcff")) == printable(EVIL + "\udcff")  # escaping twice changes nothing more
    assert "\n" not in printable(EVIL)


def test_invisible_characters_are_shown():
    # "node1" and "node1\u200b" are two hosts that look the same in a table
    assert printable("node1\u200b") == "node1\\u200b"
    for ch in ("\u00ad", "\u180e", "\u200b", "\u200c", "\u200d", "\u2060", "\u2064", "\ufeff"):
        want = f"\\u{ord(ch):04x}" if ord(ch) > 0xff else f"\\x{ord(ch):02x}"
        assert printable(f"a{ch}b") == f"a{want}b"
    assert printable("漢字 ideographic\u3000space") == "漢字 ideographic\u3000space"   # visible: kept


@pytest.fixture
def evil_db(tmp_path):
    db = str(tmp_path / "evil.db")
    run = Run(benchmark="all_reduce", hosts=[f"node{ESC}1"], ranks=1, devices=[f"GPU{ESC}"],
              tags={"owner": EVIL}, errors=[f"rank 0: {EVIL}"], status="incomplete",
              versions={"nccl": f"2.{ESC}"},
              meta={"notes": [{"text": f"note {EVIL}", "benchmark": "all_reduce"}],
                    "rank_hosts": [f"node{ESC}1"]})
    params = {"bytes": 8, "count": 2, "dtype": f"float{ESC}", "redop": "sum", "root": -1,
              "placement": "out", "ranks": 1}
    ms = [Measurement("all_reduce", "busbw", 1.0, "GB/s", params),
          Measurement("all_reduce", "time_us", 2.0, "us", params),
          Measurement(f"mystery{ESC}", "value", 3.0, "", {"host": EVIL})]
    with Store.open(db) as store:
        store.save_run(run, ms)
        store.save_run(Run(benchmark="all_reduce", hosts=["plain"], ranks=1), ms)
    return db


def test_results_show_and_list_escape(capsys, evil_db):
    code, out, err = _cb(capsys, ["results", "show", "1", "--db", evil_db])
    _clean(out + err)
    assert "\\x1b[2J" in out and "FAKE\\nPASS" in out and '# tags: owner="a\\x1b' in out
    assert not any(line.startswith("PASS") for line in out.splitlines())  # no forged line
    code, out, err = _cb(capsys, ["results", "list", "--db", evil_db])
    _clean(out + err)
    assert 'owner="a\\x1b[2J' in out
    # the tag as shown (quoted, escaped) is the selector that picks its run
    shown = next(line for line in out.splitlines() if line.startswith("    1 ")).rsplit(" ", 1)[-1]
    code, out, err = _cb(capsys, ["results", "show", shown, "--json", "--db", evil_db])
    assert code == 0 and [json.loads(x)["id"] for x in out.splitlines() if '"kind": "run"' in x] == [1]


def test_json_output_stays_exact(capsys, evil_db):
    code, out, err = _cb(capsys, ["results", "show", "1", "--db", evil_db, "--json"])
    lines = [json.loads(line) for line in out.splitlines()]
    run = next(x for x in lines if x["kind"] == "run")
    assert run["tags"]["owner"] == EVIL and run["hosts"] == [f"node{ESC}1"]
    assert {m["benchmark"] for m in lines if m["kind"] == "measurement"} == {"all_reduce", f"mystery{ESC}"}


def test_env_show_and_diff_escape(capsys, evil_db):
    code, out, err = _cb(capsys, ["env", "show", "1", "--db", evil_db])
    _clean(out + err)
    assert "node\\x1b[2J" in out
    code, out, err = _cb(capsys, ["env", "diff", "1", "2", "--db", evil_db])
    _clean(out + err)
    assert "2.\\x1b[2J" in out


def test_validate_and_compare_escape(capsys, evil_db, tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text(json.dumps({"name": "evil", "criteria": [
        {"name": "busbw \x1b[2J", "benchmark": "all_reduce", "metric": "busbw", "op": ">=", "value": 0.5,
         "unit": "GB/s"}]}))
    code, out, err = _cb(capsys, ["validate", "1", "--profile", str(profile), "--db", evil_db])
    _clean(out + err)
    assert "busbw \\x1b[2J" in out
    code, out, err = _cb(capsys, ["compare", "1", "2", "--db", evil_db])
    _clean(out + err)
    assert "mystery\\x1b[2J" in out


def test_error_line_escapes(capsys, evil_db):
    code, out, err = _cb(capsys, ["results", "show", f"tag:owner={EVIL}", "--db", evil_db])
    assert code == 2
    _clean(err)
    assert err.startswith("clusterbench: error: ") and err.count("\n") == 1


def test_imported_text_is_escaped(capsys, tmp_path):
    log = tmp_path / "evil.log"
    src = (__import__("pathlib").Path(__file__).parent / "data" / "nccl-tests").glob("*.txt")
    text = next(p for p in sorted(src) if "Avg bus bandwidth" in p.read_text()).read_text()
    lines = text.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("#  Rank"))
    lines[at] = lines[at].replace(" on ", f" on {ESC}x", 1)
    log.write_text("".join(lines))
    db = str(tmp_path / "imp.db")
    code, out, err = _cb(capsys, ["import", str(log), "--db", db])
    _clean(out + err)
    code, out, err = _cb(capsys, ["results", "show", "last", "--db", db])
    _clean(out + err)


# -- every family's table takes rows whose params are missing or odd --------------------------

def _odd_params() -> list[dict]:
    return [{}, {"bytes": "x", "count": None, "array_size": None, "device": None, "kernel": None,
                 "m": None, "stat": None, "step": "s", "batch": None, "src": None, "dst": None,
                 "test": None, "transfer": "t", "devices": "two", "optimal_algbw": "?", "nodes": None,
                 "placement": None, "dtype": None, "direction": None, "method": None}]


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_tables_take_rows_without_their_params(family):
    benchmarks = family.benchmarks or tuple(f"{p}bw" for p in family.prefixes)
    run = Run(benchmark=benchmarks[0], ranks=1, hosts=["h"], devices=["dev"],
              meta={"train": {"params": None}, "device_names": {"G0": "x"}})
    for bench in benchmarks:
        for params in _odd_params():
            ms = [m(bench, 1.5, dict(params)) for m in family.metrics]
            lines = render_run(run, ms)
            assert lines
            r = renderer_for(bench)  # and live: header, rows, footer as they arrive
            assert isinstance(r.header(run) + r.rows(ms) + r.footer(run, ms), list)


def test_results_show_of_rows_without_params(capsys, tmp_path):
    """A stream row without array_size was an internal error in ``results show``."""
    db = str(tmp_path / "bare.db")
    with Store.open(db) as store:
        for family in FAMILIES:
            bench = (family.benchmarks or tuple(f"{p}bw" for p in family.prefixes))[0]
            store.save_run(Run(benchmark=bench, ranks=1), [m(bench, 1.0, {}) for m in family.metrics])
    code, out, err = _cb(capsys, ["results", "show", "1-99", "--db", db])
    assert code == 0, err
    assert "internal error" not in err


def test_trend_and_baseline_escape(capsys, tmp_path):
    # a host name and a tag with terminal controls, over enough runs for a trend
    db = str(tmp_path / "trend.db")
    params = {"bytes": 1 << 20, "count": 1 << 18, "dtype": "float", "redop": "sum", "root": -1,
              "placement": "out", "ranks": 2}
    with Store.open(db) as store:
        for i in range(8):
            value = 10.0 if i < 4 else 7.0   # a step down at the fifth run
            store.save_run(Run(benchmark="all_reduce", hosts=[f"node{ESC}1"], ranks=2, tags={"owner": EVIL},
                               started_at=f"2026-11-{10 + i:02d}T00:00:00Z"),
                           [Measurement("all_reduce", "busbw", value + 0.01 * i, "GB/s", params)])
    code, out, err = _cb(capsys, ["trend", "--db", db])
    _clean(out + err)
    assert code == 0 and "node\\x1b[2J" in out
    profile = tmp_path / "base.yaml"
    # a profile name with controls is refused (it would reach every report naming the profile),
    # in a line that shows it escaped
    code, out, err = _cb(capsys, ["baseline", "create", "1-4", "--name", f"b{ESC}", "-o", str(profile), "--db", db])
    _clean(out + err)
    assert code == 2 and not profile.exists() and "b\\x1b[2J" in err, (code, out, err)
    code, out, err = _cb(capsys, ["baseline", "create", "1-4", "-o", str(profile), "--db", db])
    _clean(out + err)
    assert code == 0 and profile.exists(), (code, out, err)
