"""Tests of clusterbench.ingest: importers for the logs of the standard tools."""

import json

import pytest
from import_sources import BOM, _ms, by_file
from ingest_helpers import (
    A3MEGA,
    MEASUREMENT,
    RUN,
    SEED,
    TITANXP,
    WOHLBIER,
    _jsonl,
    _Newlines,
    _with,
    nccl_json,
    table_rows,
)
from paths import DATA
from tool_log_texts import records as records_ingest_common

import clusterbench.ingest as ingest
from clusterbench.families import metric_of, renderer_for
from clusterbench.families.base import GenericRenderer
from clusterbench.ingest import IMPORTERS, TOOLS, detect_tool, iter_runs, parse_text, split_tools
from clusterbench.ingest.common import text_lines
from clusterbench.ingest.nccl_tests import LEGACY_UNNAMED_OP as BENCH_UNKNOWN
from clusterbench.records import INCOMPLETE

LOGS = sorted(p for p in DATA.glob("*/*") if p.suffix not in (".md", ".db", ".yaml")
              and p.parent.name not in ("golden", "schemas", "sysfs") and p.is_file())


OSU_BW = DATA / "osu" / "oci-osu_bw-v7.5-cuda-DD-no-buffer-line-datatype.txt"


PERFTEST = DATA / "perftest" / "elizabetht-spark-ib_write_bw-roce-gb10-mtu1024.txt"


HIPBLASLT = DATA / "hipblaslt-bench" / "mi350x-v100200-bf16-7168x4096x18432-gbs-print-kernel-info.txt"


def records(runs):
    return [sorted((m.benchmark, m.metric, m.value, tuple(sorted(m.params.items()))) for m in r.measurements)
            for r in runs]


def alone(*paths):
    out = []
    for p in paths:
        out += parse_text(p.read_text(), name=p.name)
    return out


BOM_import_mixed = "\ufeff"


MIXED = [(A3MEGA, TITANXP), (TITANXP, A3MEGA), (WOHLBIER, OSU_BW, A3MEGA), (OSU_BW, PERFTEST, HIPBLASLT)]


def _prefixed(text, prefix):
    return "".join(prefix + line + "\n" for line in text.split("\n") if line)


@pytest.fixture(scope="module")
def text_run_import_nccl_files():
    return parse_text(SEED.read_text(), name=SEED.name)[0]


def rccltable_rows(text_run_import_nccl_files):
    for (size, _count), places in table_rows(text_run_import_nccl_files).items():
        for inplace, p in ((0, places["out"]), (1, places["in"])):
            yield size, inplace, p


# -- JSON behind a launcher's prefixes ----------------------------------------------------------
PREFIXES = ["0: ", "  3: ", "[1,0]<stdout>:", "node1: ", "2025-01-31T10:00:00Z ", "node1: 0: "]


def test_every_importer_is_found_and_every_tool_detected_by_its_own_logs():
    assert {imp.tool for imp in IMPORTERS} | {a for imp in IMPORTERS for a in imp.aliases} == set(TOOLS)
    assert len(LOGS) > 30


@pytest.mark.parametrize("log", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_imported_records_are_declared_by_their_family(log):
    text = log.read_text(errors="replace")
    if detect_tool(text) is None:
        pytest.skip("not a log clusterbench imports (kept to test refusal)")
    try:
        runs = parse_text(text, name=log.name)
    except Exception as e:  # noqa: BLE001 - logs without results are tested elsewhere
        pytest.skip(f"no results: {e}")
    for r in runs:
        for m in r.measurements:
            if m.benchmark == BENCH_UNKNOWN:  # a table whose op cannot be named stays generic
                assert isinstance(renderer_for(m.benchmark), GenericRenderer)
                continue
            declared = metric_of(m.benchmark, m.metric)
            assert declared is not None, (m.benchmark, m.metric)
            assert declared.unit_for(m.params) == m.unit, (m.benchmark, m.metric, m.unit)


def test_lines_of_older_clusterbench_without_kind_are_measurements():
    ms = _ms(2)
    text = "\n".join(m.to_json(4) for m in ms)
    assert detect_tool(text) == "clusterbench-jsonl"
    (got,) = parse_text(text)
    assert got.measurements == ms and got.run.status == "incomplete"


def test_the_head_and_each_line_end_at_a_line_feed(monkeypatch):
    text = "ab\rcd\nef\r\r\ngh\r\n" * 50 + "tail\rend"
    for head_chars in (1, 2, 3, 4, 7, 10, 64, 1 << 16):
        monkeypatch.setattr(ingest, "HEAD_CHARS", head_chars)
        head, rest = ingest._head(_Newlines(text))
        lines = [*head, *rest]
        assert all(ln.endswith("\n") for ln in lines[:-1]) and "".join(lines).rstrip("\n") == text, head_chars


def test_a_bom_is_not_part_of_the_first_line(tmp_path):
    # a JSON document behind one was refused ("no iperf3 results"), an OSU banner unknown, an
    # nccl-tests rank list lost its first line
    iperf = (DATA / "iperf3" / "cloudpilot-10k_file-bytes-mode.json").read_bytes()
    osu = (DATA / "osu" / "hpcbench-osu_bw-v5.3.2-host.txt").read_bytes()
    for name, data in (("iperf.json", iperf), ("osu_bw.txt", osu)):
        assert by_file(tmp_path, BOM + data, name) == by_file(tmp_path, data, name)
        assert by_file(tmp_path, BOM + data, name)[1] is None
    assert detect_tool((BOM + osu).decode()) == "osu"
    (run,) = iter_runs(["\ufeff" + ln for ln in text_lines(osu.decode())][:1] + text_lines(osu.decode())[1:])
    assert run.run.to_dict() | {"started_at": ""} == parse_text(osu.decode())[0].run.to_dict() | {"started_at": ""}


@pytest.mark.parametrize("paths", [
    (A3MEGA, TITANXP),                 # nccl-tests (read as it streams) then BabelStream
    (TITANXP, A3MEGA),                 # BabelStream then nccl-tests
    (WOHLBIER, OSU_BW, A3MEGA),        # nccl-tests, OSU (its mpirun line before it), nccl-tests again
    (OSU_BW, PERFTEST, HIPBLASLT),     # three tools, none of them streamed
], ids=["nccl-stream", "stream-nccl", "nccl-osu-nccl", "osu-perftest-hipblaslt"])
def test_every_tools_runs_are_kept_with_their_own_records(paths):
    mixed = parse_text("".join(p.read_text() for p in paths), name="session.log")
    want = alone(*paths)
    assert [r.run.meta["tool"] for r in mixed] == [r.run.meta["tool"] for r in want]
    assert records(mixed) == records(want)
    assert [r.run.status for r in mixed] == [r.run.status for r in want]


@pytest.mark.parametrize("paths", MIXED, ids=["nccl-stream", "stream-nccl", "nccl-osu-nccl", "osu-perftest-hipblaslt"])
@pytest.mark.parametrize("copies", [1, 40], ids=["whole", "streamed"])   # the first past 64 KiB: read as it streams
@pytest.mark.parametrize("line_end", ["\n", "\r\n"], ids=["LF", "CRLF"])
def test_a_bom_before_another_tools_output(paths, copies, line_end):
    # the later tools' output saved with a byte order mark: the cleaners drop it, but the
    # split between tools was looked for on the raw text, where it hid a tool's first line (a
    # small nccl-tests log then BabelStream: the BabelStream run was lost in the nccl-tests part)
    texts = [paths[0].read_text() * copies] + [p.read_text() for p in paths[1:]]
    mixed = parse_text(BOM_import_mixed.join(texts).replace("\n", line_end), name="session.log")
    want = parse_text("".join(texts).replace("\n", line_end), name="session.log")
    assert [r.run.meta["tool"] for r in mixed] == [r.run.meta["tool"] for r in want]
    assert records(mixed) == records(want)
    assert [r.run.status for r in mixed] == [r.run.status for r in want]


@pytest.mark.parametrize("paths", MIXED, ids=["nccl-stream", "stream-nccl", "nccl-osu-nccl", "osu-perftest-hipblaslt"])
@pytest.mark.parametrize("prefix", ["[1,0]<stdout>:", "\x1b[32m", "2025-01-31T10:00:00Z ", "3: ", "node7: "],
                         ids=["mpirun-tag", "colour", "timestamp", "srun-label", "pdsh"])
@pytest.mark.parametrize("where", ["every", "later"])
def test_a_prefix_before_every_line_hides_no_tool(paths, prefix, where):
    # the parsers read each tool's lines without launcher prefixes and colour codes; the split
    # between tools was looked for on the raw text, where a prefix hid each tool's first line
    # (nccl-tests then BabelStream under mpirun --tag-output: the whole file read as BabelStream,
    # the nccl-tests runs lost)
    texts = [p.read_text() for p in paths]
    if where == "later":   # the first tool's output bare, a prefix on the later tools' lines only
        if prefix == "node7: ":
            pytest.skip("pdsh's host prefix is taken off only where the log's start shows it")
        mixed = parse_text(texts[0] + "".join(_prefixed(t, prefix) for t in texts[1:]), name="session.log")
    else:
        mixed = parse_text("".join(_prefixed(t, prefix) for t in texts), name="session.log")
    want = parse_text("".join(_prefixed(t, "") for t in texts), name="session.log")
    assert [r.run.meta["tool"] for r in mixed] == [r.run.meta["tool"] for r in want]
    assert records(mixed) == records(want)
    assert [r.run.status for r in mixed] == [r.run.status for r in want]


def test_tool_starts_are_seen_without_a_bom():
    text = A3MEGA.read_text() + BOM_import_mixed + TITANXP.read_text()
    parts = split_tools(text, "nccl-tests")
    assert parts == split_tools(text.replace(BOM_import_mixed, ""), "nccl-tests")
    assert [t for t, _ in parts] == ["nccl-tests", "babelstream"]


def test_a_command_line_before_another_tools_output_goes_with_it():
    text = (A3MEGA.read_text() + "$ mpirun -n 2 osu_bw -d cuda D H\n"
            + "".join(ln for ln in OSU_BW.read_text().splitlines(keepends=True) if "mpirun" not in ln))
    nccl, osu = parse_text(text, name="x.log")
    assert osu.run.meta["log_command"].startswith("mpirun -n 2 osu_bw") and osu.measurements[0].params["buffers"] == "D H"
    assert records([nccl]) == records(alone(A3MEGA))


def test_nccl_json_cut_short_is_incomplete(text_run_import_nccl_files):
    r = parse_text(nccl_json(text_run_import_nccl_files, finished=False), name="out.json")[0]
    assert r.run.status == "incomplete"
    assert len([m for m in r.measurements if m.metric == "busbw"]) == 20
    assert not [m for m in r.measurements if m.metric == "avg_busbw"]


def test_rccl_json_with_unquoted_strings(text_run_import_nccl_files):
    # the Reporter writes "key":value with string values unquoted, one object per line
    objs = [f'{{"numCycle":0, "name":AllReduce, "gpus":8, "size":{size}, "type":float, "redop":sum, '
            f'"inPlace":{inplace}, "time":{p["time_us"]}, "algBw":{p["algbw"]}, "busBw":{p["busbw"]}, "wrong":N/A}}'
            for size, inplace, p in rccltable_rows(text_run_import_nccl_files)]
    doc = "[\n" + ",\n".join(objs) + "\n]\n"
    r = parse_text(doc, name="rccl.json")[0]
    assert r.run.meta["op"] == "all_reduce" and r.run.ranks == 8
    assert not [m for m in r.measurements if m.metric == "wrong"]  # N/A
    busbw = [m for m in r.measurements if m.metric == "busbw" and m.params["bytes"] == 8589934592]
    assert sorted(m.value for m in busbw) == [315.84, 316.55]


@pytest.mark.parametrize("tool", ["perftest", "iperf3", "osu"])
def test_every_log_is_detected(tool):
    for path in sorted((DATA / tool).iterdir()):
        if path.name != "README.md" and "invalid" not in path.name and "version" not in path.name:
            assert detect_tool(path.read_text()) == tool, path.name


@pytest.mark.parametrize("tool", ["babelstream", "rocblas-bench", "hipblaslt-bench"])
def test_every_log_is_detected_import_node_tools(tool):
    for path in sorted((DATA / tool).iterdir()):
        if path.name != "README.md":
            assert detect_tool(path.read_text()) == tool, path.name


def test_v6_failed_validation_before_the_table():
    # v6.0-rc prints at most 10 of these and exits before its table (src/main.cpp check_solution)
    text = ("BabelStream\nVersion: 6.0-rc\nImplementation: CUDA\nRunning All kernels 100 times in Classic order\n"
            "FAILED validation of a[3]: 0.1 (is) != 0.2 (should), diff=0.1 > 1e-14 (largest=0.1, max_rel=0.5)\n")
    (r,) = parse_text(text, name="x.txt")
    assert r.run.status == "failed" and r.run.errors[0].startswith("FAILED validation of a[3]")


def test_jsonl_surrogate_pairs_are_text(tmp_path):
    """An escaped character beyond the BMP (a pair of surrogates in JSON) is one character."""
    path = _jsonl(tmp_path, _with(MEASUREMENT, "unit", r'"\ud83d\ude80"'))
    (run,) = parse_text(path.read_text())
    assert run.measurements[0].unit == "\U0001f680"


@pytest.mark.parametrize("at", ["2026-11-23T18:13:34.099Z", "2026-11-23T18:13:34+02:00", "2026-11-23 18:13:34",
                                "2026-11-23T18:13:34.123456"])
def test_jsonl_iso_8601_times_are_kept_as_written(tmp_path, at):
    path = _jsonl(tmp_path, json.dumps(MEASUREMENT), json.dumps({**RUN, "started_at": at}))
    (run,) = parse_text(path.read_text())
    assert run.run.started_at == at


def test_a_run_whose_every_figure_is_below_zero_is_not_complete():
    log = "# OSU MPI Bandwidth Test v5.3.2\n# Size      Bandwidth (MB/s)\n2097152             -11923.92\n"
    (run,) = parse_text(log)
    assert run.measurements == []
    assert run.run.status == INCOMPLETE


@pytest.mark.parametrize("path", ["iperf3/v3.12-bidir-loopback-json.json",
                                  "vllm-serving/ascend-qwen2.5-vl-3b-bench-serve-save-result.json"])
@pytest.mark.parametrize("prefix", PREFIXES, ids=["srun-label", "srun-padded", "mpirun-tag", "pdsh", "timestamp",
                                                  "pdsh-srun"])
def test_json_behind_a_launcher_prefix_reads_as_without(path, prefix):
    log = (DATA / path).read_text()
    prefixed = "".join(prefix + ln + "\n" for ln in log.split("\n"))
    assert records_ingest_common(parse_text(prefixed)) == records_ingest_common(parse_text(log))


@pytest.mark.parametrize("prefix", ["0: ", "[1,0]<stdout>:", "node1: "])
@pytest.mark.parametrize("pretty", [False, True], ids=["one-line", "indented"])
def test_nccl_tests_json_behind_a_launcher_prefix(prefix, pretty):
    text_run = parse_text(SEED.read_text(), name=SEED.name)[0]
    doc = nccl_json(text_run)
    if pretty:
        doc = json.dumps(json.loads(doc), indent=1)
    (want,) = parse_text(doc, name="out.json")
    (r,) = parse_text("".join(prefix + ln + "\n" for ln in doc.split("\n")), name="out.json")
    assert r.run.status == "complete" and r.run.meta["op"] == "all_reduce"
    assert len(r.measurements) == len(want.measurements) == 250
