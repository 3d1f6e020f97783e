"""Stored runs for the commands that read them (results, compare, report, validate, export, import):
real logs, extreme values, hostile text, and the CLI run on them."""

from __future__ import annotations

import contextlib
import io
import json
import re
import sqlite3
from pathlib import Path

import pytest
from judge_helpers import cli, run_cli
from paths import DATA, TESTS

from clusterbench.cli import main
from clusterbench.judge.select import Row
from clusterbench.records import Measurement, Run, TelemetrySample
from clusterbench.store import Store

# the in-process CLI (judge_helpers.cli), by the names its tests know it
cli_results_cmds = cli_store_cli = cli_store_options = cli_store_location = cli

GOLDEN = TESTS / "data" / "golden" / "pre-redesign.db"


EXTREMES = [1.7e308, 1e-300, 5e-324, -0.0, 0.0, 123456789012345678.0, 12.5, 3.25, -7.5, 1e15, -1.7e308]


# the database's values: -1.7e308 and 1.7e308 in one row overflow the judge's standard deviation
# (see test_compare_of_values_spanning_the_float_range)
STORED = EXTREMES[:-1]


# a run of digits no column holds: what an unbounded fixed-point format prints for 1.7e308
WALL = re.compile(r"\d[\d,]{24,}")


def _ok(rc: int, out: str, err: str, codes: tuple[int, ...] = (0,)) -> None:
    assert rc in codes, (rc, err)
    assert "Traceback" not in out + err and "internal error" not in err, err


G8 = 8 << 30


def _coll(v: float) -> list[Measurement]:
    return [Measurement("all_reduce", metric, v, "GB/s", {"bytes": G8, "count": G8 // 4, "dtype": "float",
                                                           "redop": "sum", "root": -1, "placement": place})
            for metric in ("busbw", "algbw") for place in ("out", "in")]


def _stream(v: float) -> list[Measurement]:
    return [Measurement("stream", "bandwidth", v, "GB/s",
                        {"kernel": "Triad", "dtype": "double", "device": "0", "array_size": 1 << 28})]


RCCL = DATA / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt"      # out- and in-place columns


A3 = DATA / "nccl-tests" / "a3mega-h100-2node-all_reduce.txt"


PKB = DATA / "nccl-tests" / "pkb-k80-2node-transitional-format-wrong-na.txt"   # N/A in #wrong


PERFTEST = DATA / "perftest" / "cx7-ndr-4-tools-mib-sec-default-cpu-freq-warnings.txt"   # import warnings


BABEL = DATA / "babelstream" / "kaanolgu-v4.0-openacc-v100-validation-failed.txt"   # failed, errors


VLLM = DATA / "vllm-serving" / "vllm-pr7062-serving-result-text-truncated.txt"     # incomplete


OSU = DATA / "osu" / "hpcbench-osu_bw-v5.3.2-host.txt"


ODD_TAGS = {"team": 'a,b "q" <b>&amp;', "nl": "x\ny", "ctl": "bell\x07\x1b[31m"}


ODD_ERROR = "boom <b>bold</b> & \x1b[2J"


def _cli(*argv: object) -> tuple[int, str, str]:
    return run_cli(*argv)


def _lines(text: str) -> list[dict]:
    return [json.loads(x) for x in text.splitlines() if x.startswith("{")]


def _store(db: str, params: list[dict], benchmark: str = "all_reduce", metric: str = "busbw",
           hosts: tuple[str, ...] = ("gpu01",)) -> int:
    with Store.open(db) as s:
        return s.save_run(Run(benchmark, hosts=list(hosts), started_at="2026-03-01T02:00:00.000Z",
                              status="complete"),
                          [Measurement(benchmark, metric, 10.0 * (i + 1), "GB/s", p) for i, p in enumerate(params)])


def _one_line(rc, out, err, *words):
    assert rc == 2 and len(err.splitlines()) == 1, (rc, out, err)
    assert err.startswith("clusterbench: error: ") and "internal error" not in err, err
    for w in words:
        assert str(w) in err, err


SEED_NCCL = DATA / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt"


ALLTOALL = DATA / "nccl-tests" / "superbench-nccl_alltoall.log"


SWEEP = DATA / "transferbench" / "docs-presets-sweep-v1.67.txt"


def _ids(db: str) -> list[int]:
    with Store.open(db) as s:
        return sorted(int(r.id or 0) for r in s.list_runs())


def cli_show_tables_complete(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(list(argv))
        except SystemExit:
            pass
    return out.getvalue()


def shown_show_tables_complete(run: int, db: str) -> tuple[str, list[dict]]:
    """``results show RUN``: its text, and the measurements of its --json."""
    text = cli_show_tables_complete("results", "show", str(run), "--db", db)
    records = [json.loads(line) for line in cli_show_tables_complete("results", "show", str(run), "--db", db,
                                                                     "--json").splitlines()
               if line.startswith("{")]
    return text, [r for r in records if r.get("kind") == "measurement"]


def import_log(path: Path, db: str) -> list[int]:
    lines = cli_show_tables_complete("import", str(path), "--db", db, "--json").splitlines()
    records = [json.loads(line) for line in lines if line.startswith("{")]
    summary = next(r for r in records if r.get("kind") == "summary")
    return list(summary["runs"])


NUL = "a\x00b"


def _m(**kw) -> Measurement:
    return Measurement(**{"benchmark": "all_reduce", "metric": "busbw", "value": 1.5, "unit": "GB/s",
                          "params": {"bytes": 8, "placement": "out"}, **kw})


def _slow_gpu_rows() -> list[Row]:
    """Four single-host runs of 8 GPUs; GPU 3 of host c 30% slow."""
    rows_validate_probe = []
    for i, host in enumerate("abcd"):
        run = Run("stream", hosts=[host], tags={"node": host})
        run.id = i + 1
        for d in range(8):
            v = 4000.0 * (1 + 0.001 * d) * (0.7 if (host, d) == ("c", 3) else 1)
            rows_validate_probe.append(Row(run, Measurement("stream", "bandwidth", v, "GB/s", {"kernel": "Triad", "device": str(d)})))
    return rows_validate_probe


def _run_cli(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as e:
        main(argv)
    out, err = capsys.readouterr()
    assert not e.value.code, err
    return out


def _one_line_usage_error(rc, out, err, *words):
    assert rc == 2 and out == "" and len(err.splitlines()) == 1, (rc, out, err)
    assert err.startswith("clusterbench: error: ") and "Traceback" not in err and "internal error" not in err
    for w in words:
        assert w in err, err


def _source(path: Path, runs: int = 2) -> str:
    with Store.open(path) as s:
        for i in range(runs):
            s.save_run(Run("coll", hosts=[f"h{i}"], started_at=f"2026-01-0{i + 1}T00:00:00.000Z"),
                       [Measurement("all_reduce", "busbw", 1.5 + i, "GB/s", {"bytes": 8})])
    return str(path)


def _edit(db: str, sql: str, *args: object) -> None:
    con = sqlite3.connect(db)
    with con:
        con.execute(sql, args)
    con.close()


def _runs(db: str, n: int, tags: dict[str, str] | None = None) -> list[int]:
    with Store.open(db) as s:
        return [s.save_run(Run(benchmark="coll", hosts=["n1"], tags=dict(tags or {})),
                           [Measurement("all_reduce", "busbw", float(i + 1), "GB/s", {"bytes": 8 << i})],
                           [TelemetrySample(0.5, "gpu_util", 90.0, "%", "n1", "0")])
                for i in range(n)]


def _run(**kw) -> Run:
    return Run(**{"benchmark": "coll", "hosts": ["h1"], "ranks": 1, "tags": {"env": "x"}, **kw})


OSU_BW = DATA / "osu" / "hpcbench-osu_bw-v5.3.2-host.txt"


FAILED_NCCL = DATA / "nccl-tests" / "issue287-5090-2gpu-test-nccl-failure-no-rows.txt"


def _store_probe_run(rid, *, status="complete", source="clusterbench 1", tags=None, started="2026-01-02T00:00:00.000Z",
         meta=None):
    return json.dumps({"kind": "run", "id": rid, "benchmark": "coll", "source": source, "command": ["x"],
                       "started_at": started, "ended_at": None, "status": status, "hosts": ["h1"], "ranks": 2,
                       "devices": [], "versions": {}, "env": {}, "tags": tags or {}, "errors": [],
                       "meta": meta if meta is not None else {"n": {"a": [1, {"b": None}]}}})


def _store_selectors_m(bench: str) -> Measurement:
    return Measurement(bench, "bandwidth", 1.0, "GB/s", {})


# Tags that collide with the grammar: its separator, '=', bench:, ranges, ids, last, quotes,
# backslashes, space at the ends, an empty key or value, control characters (an import keeps
# whatever its lines held).
AWKWARD = [
    ("team", "a,b"), ("bench:x", "1"), ("a=b", "c"), ("k", "x=y=z"), ("k", " v "), (" k ", "v"),
    ("", "empty key"), ("e", ""), ("", ""), ("last", "1"), ("last~2", "x"), ("12", "x"), ("3..7", "y"),
    ("3-7", "1..2"), ("q", '"quoted"'), ("q", 'say "hi"'), ("bs", "a\\b"), ("bs", "\\x41"), ("bs", "\\"),
    ("ctl\n", "a\rb\tc\x1b[2J"), ("bidi", "\u202eevil"), ("c1", "\x85\x9b"), ("sp", " "), ("u", "Größe µs"),
    ("colon:x", "a:b"), ("bench:", "bench:"), ("comma,key", ","), ('"', '"'), ("=", "="),
]


def _tag_selectors_run(tags: dict[str, str]) -> Run:
    return Run(benchmark="all_reduce", source="clusterbench 0.1.0", started_at="2026-11-01T10:00:00.000Z",
               hosts=["h1"], tags=tags)


# digits in one run: what %.2f prints for a value past 1e24 (WALL would take a list of run ids)
DIGITS = re.compile(r"\d{25,}")


def _no_wall(argv: list[str], out: str, err: str) -> None:
    for line in (out + err).splitlines():
        assert not DIGITS.search(line), (argv, line)


# (benchmark column, source, started_at, tags, measured benchmarks)
RUNS = [
    ("coll", "clusterbench 0.1.0", "2026-11-01T10:00:00.000Z", {"env": "a"}, ["all_reduce", "all_gather"]),
    ("stream", "clusterbench 0.1.0", "2026-11-10T10:00:00.000Z", {"env": "a", "node": "n1"}, ["stream"]),
    ("import", "rccl-tests develop:ae3e635", "2026-11-20T10:00:00.000Z", {"env": "b"}, ["all_reduce"]),
    ("import", "osu 7.0", "2026-11-21T10:00:00.000Z", {"env": "b"}, ["osu_bw"]),
    ("import", "babelstream 5.0", "2026-11-22T10:00:00.000Z", {"env": "b", "node": "n1"}, ["stream"]),
    ("suite", "clusterbench 0.1.0", "2026-11-23T10:00:00.000Z", {"env": "a"}, ["sendrecv", "stream", "gemm"]),
]


def save_selector_runs(s: Store) -> None:
    """RUNS saved in order (ids 1..6), one measurement for each benchmark a run names."""
    for bench, source, started, tags, measured in RUNS:
        s.save_run(Run(benchmark=bench, source=source, started_at=started, tags=tags, hosts=["h1"],
                       meta={"tool": source.split()[0]} if bench == "import" else {}),
                   [_store_selectors_m(b) for b in measured])


PROBE_TAGS = ["team=a,b", 'q="x"', "k=v=w", "uni=ñü日本", "long=" + "x" * 4000, "bench:x=1", "B=1", "a=2",
            "Z=3", "_x=1", "é=1", "sp= v "]


def _probe_meas(rid, bench, metric, value, params, unit="GB/s"):
    return json.dumps({"kind": "measurement", "run": rid, "benchmark": bench, "metric": metric, "value": value,
                       "unit": unit, "params": params})


def _probe_logs(tmp: Path) -> dict[str, Path]:
    files = {
        "empty": _store_probe_run(1, tags={"empty": "yes"}),
        "failed": "\n".join([_probe_meas(2, "all_reduce", "busbw", 1.5, {"bytes": 8}), _store_probe_run(2, status="failed")]),
        "extreme": "\n".join([
            _probe_meas(3, "all_reduce", "busbw", 5e-324, {"bytes": 8}),
            _probe_meas(3, "all_reduce", "busbw", 1.7e308, {"bytes": 16}),
            _probe_meas(3, "all_reduce", "busbw", 10**15 + 1, {"bytes": 32, "nested": {"a": [1, {"x": "é\u2028"}]}}),
            _store_probe_run(3, started="2026-02-01T00:00:00.000Z")]),
        # an import whose tool is spelt in capitals: bench:osu must not pick it, nor bench:OSU osu's runs
        "upper": "\n".join([_probe_meas(4, "OSU_bw", "bandwidth", 3.0, {"bytes": 8}),
                            _store_probe_run(4, source="OSU 7.0", meta={"tool": "OSU"})]),
    }
    paths = {}
    for name, text in files.items():
        paths[name] = tmp / f"{name}.jsonl"
        paths[name].write_text(text + "\n")
    return paths


def build_probe_db(capsys, db: str, tmp: Path) -> None:
    """Real logs and JSON lines of every odd kind (empty, failed, extreme values, a tool spelt in
    capitals) imported into ``db`` with hostile tags."""
    logs = _probe_logs(tmp)
    imports = [[SEED_NCCL, *[a for t in PROBE_TAGS[:5] for a in ("--tag", t)]],
               [OSU_BW, *[a for t in PROBE_TAGS[5:] for a in ("--tag", t)]],
               [FAILED_NCCL], [logs["empty"]], [logs["failed"]], [logs["extreme"], "--tag", "x=ext"],
               [logs["upper"]]]
    for argv in imports:
        rc, _, err = cli(capsys, "import", *argv, "--db", db)
        assert rc in (0, 1) and "Traceback" not in err, err
