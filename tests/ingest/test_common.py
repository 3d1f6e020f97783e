"""Tests of clusterbench.ingest.common: what every log importer shares."""

import io
import json
import math
import random
from pathlib import Path

import pytest
from ingest_helpers import GH200, REFUSED, _Newlines, damaged, is_row, runs, with_cycles
from nccl_read_paths import (
    BOM,
    DATA,
    FOOTER,
    HEADER,
    LOGS,
    _agreed,
    _rows,
    divergence,
)
from paths import DATA as DATA_import_more_formats
from paths import DATA as DATA_import_net_tools2
from paths import TESTS
from tool_log_texts import (
    SWEEP,
    DATA_import_net_tools,
    DATA_ingest_malformed,
    runs_import_stream_forms,
    text_tool_logs,
)

import clusterbench.ingest as ingest
from clusterbench.ingest import LogFormatError as LogFormatError_import_mixed
from clusterbench.ingest import LogFormatError as LogFormatError_import_more_formats
from clusterbench.ingest import LogFormatError as LogFormatError_import_nccl
from clusterbench.ingest import LogFormatError as LogFormatError_import_nccl_faults
from clusterbench.ingest import LogFormatError as LogFormatError_import_nccl_files
from clusterbench.ingest import LogFormatError as LogFormatError_import_net_tools
from clusterbench.ingest import LogFormatError as LogFormatError_import_stream_forms
from clusterbench.ingest import LogFormatError as LogFormatError_ingest_common
from clusterbench.ingest import LogFormatError as LogFormatError_ingest_malformed
from clusterbench.ingest import LogFormatError as LogFormatError_tool_logs
from clusterbench.ingest import common, iter_runs, parse_text
from clusterbench.ingest.common import (
    Lines,
    LogFormatError,
    Roles,
    TextCleaner,
    clean_lines,
    text_lines,
)
from clusterbench.ingest.nccl_tests import parse_lines

FAILURE = "node1: Test NCCL failure common.cu:1005 'unhandled cuda error'"


DATA_import_mixed = TESTS / "data"


A3MEGA = DATA_import_mixed / "nccl-tests" / "a3mega-h100-2node-all_reduce.txt"


def runs_import_nccl_faults(name: str, as_name: str | None = None):
    return parse_text((DATA / name).read_text(), name=as_name or name)


def one(name: str, as_name: str | None = None):
    (r,) = runs_import_nccl_faults(name, as_name)
    return r


CONFIG = DATA_ingest_malformed / "transferbench" / "docs-timing-config-example-v1.6x.txt"


P2P = DATA_ingest_malformed / "transferbench" / "docs-presets-p2p-mi350x-v1.67.txt"


# -- lines without end -----------------------------------------------------------------------
class _Counting(io.RawIOBase):
    """A file read through, counting the bytes that were read."""

    def __init__(self, path: Path) -> None:
        self.f = open(path, "rb")  # noqa: SIM115
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        data = self.f.read(len(b))
        b[:len(data)] = data
        self.read_bytes += len(data)
        return len(data)

    def close(self) -> None:
        self.f.close()
        super().close()


def _text_of(raw: _Counting):
    return io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8", errors="replace", newline="")


LOG_LINES = [
    "# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20",
    "#",
    "# Rank 0 Pid 806883 on SMC-SC-DC19-06 device 0 [0000:05:00.0] AMD Instinct MI300X",
    "# size count type redop root time algbw busbw #wrong time algbw busbw #wrong",
    "8 2 float sum -1 34.13 0.00 0.00 0 39.55 0.00 0.00 0",
    "8589934592 2147483648 float sum -1 47488 180.88 316.55 0 47594 180.48 315.84 0",
    "# Avg bus bandwidth : 70.742",
    "rccl-tests: Version develop:ae3e635",
    "> mpirun -np 16 \\",
    "a | b \\| c \\\\ d \\* e **bold** f",
    "[1,0]<stdout>: # Rank 1 Pid 2 on h device 1 [0x00] A100",
    "12: 2024-01-01 10:00:00 x",
]


# what a wrap may put at the start of the next source line, and after a closing backtick
WRAP_STARTS = ["", "", "", " ", "\t", "[1,0]<stdout>:", "(h, rank=1, pid=2) ", "12: ", "2024-01-01 10:00:00 ",
               "2(factor) ", "\xa0"]


AFTERS = ["", "", "", "", " ", "\t", " text", " :mark:`more`", " `", "**x**", "\\|"]


def _document(rng: random.Random) -> str:
    out: list[str] = []
    for _ in range(rng.randint(1, 25)):
        line = rng.choice(LOG_LINES)
        if rng.random() < 0.2:
            out.append(line)
        else:
            words = line.split(" ")
            while rng.random() < 0.4 and len(words) > 1:   # the page wrapped the role
                k = rng.randrange(1, len(words))
                words[k] = "\n" + rng.choice(WRAP_STARTS) + words[k]
            before = rng.choice(["", "", "", "see ", "` "])
            out.append(f"{before}:mark:`{' '.join(words)}`{rng.choice(AFTERS)}")
        if rng.random() < 0.7:
            out.append("")
    return "\n".join(out) + "\n"


def _random_text(rng: random.Random) -> str:
    atoms = [":mark:`", "`", "\n", "\n", " ", "\t", "**", "\\|", "\\", "[1,0]<stdout>:", "12: ", "x", "AMD",
             ":mark:`a`", ":mark:`AMD\nInstinct`", "\x00", "\xa0"]
    return "".join(rng.choice(atoms) for _ in range(rng.randint(1, 40))) + "\n"


def _blocks(rng: random.Random, text: str) -> list[str]:
    """``text`` cut into blocks of whole lines, as text_chunks hands them over."""
    lines = text.split("\n")[:-1]
    cuts = sorted(rng.sample(range(1, len(lines)), min(rng.randint(0, 3), len(lines) - 1))) if len(lines) > 1 else []
    bounds = [0, *cuts, len(lines)]
    return ["".join(ln + "\n" for ln in lines[a:b]) for a, b in zip(bounds, bounds[1:])]


def _undone(blocks: list[str], bulk: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], bool]:
    with monkeypatch.context() as m:
        if not bulk:
            m.setattr(common, "_plain_roles", lambda text: None)
        roles = Roles()
        out = [roles.feed(b) for b in blocks]
        out.append(roles.rest())
        return out, roles.open_at_end


def test_an_iteration_row_without_its_transfer_is_refused():
    with pytest.raises(LogFormatError, match="line 1: per-iteration row 'Iter 006' has no Transfer"):
        parse_text("      Iter 006    |  33.616 GB/s |    1.996 ms |\n", tool="transferbench")


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_every_path_agrees_on_the_real_logs(path, tmp_path):
    text = path.read_text(encoding="utf-8", errors="replace")
    assert divergence(text, path.name, random.Random(1), str(tmp_path), processes=False) is None


def test_a_launcher_prefix_before_pdsh_hosts(tmp_path):
    # clean_lines takes prefixes off, then the host, then prefixes again; the block cleaner
    # took the host off first, which a tag before it hides
    lines = [f"[1,0]<stdout>:node1: {ln}" for ln in [*HEADER, *_rows(), *FOOTER]]
    (run,) = _agreed(lines, tmp_path, head=5)   # pdsh is judged on 5 lines or more
    assert dict(run)["status"] == "complete"


def test_a_prefix_on_later_lines_of_a_pdsh_log(tmp_path):
    # the log's start shows no launcher prefix, so the block cleaner took none off; with a pdsh
    # host after it the parser could not either
    lines = [f"node1: {ln}" for ln in [*HEADER, *_rows(), *FOOTER]]
    lines[6] = "[2025-11-19 18:02:33] " + lines[6]
    (run,) = _agreed(lines, tmp_path, head=5)
    assert dict(run)["status"] == "complete"


def test_a_bare_timestamp_on_later_lines(tmp_path):
    # the parser takes a prefix the start did not show off a line's start; a timestamp's first
    # ':' comes after its date, past where it looked
    rows = _rows()
    rows[3] = "2025-11-19T18:02:33.123Z " + rows[3]
    (run,) = _agreed([*HEADER, *rows, *FOOTER], tmp_path)
    assert dict(run)["status"] == "complete"


def test_a_colour_code_before_a_pdsh_host(tmp_path):
    # whether pdsh prefixed the lines is judged on the lines as shown, colour codes removed
    lines = [f"node1: {ln}" for ln in [*HEADER, *_rows(2), *FOOTER]]
    lines[0] = "\x1b[32m" + lines[0]
    (run,) = _agreed(lines, tmp_path, head=len(lines))
    assert dict(run)["hosts"] == ["node1", "node2"]


def test_rows_after_a_footer_with_nothing_before_it(tmp_path):
    # 'Collective test concluded' with no table: its rows were one run or two depending on
    # whether they came in one block; they are one run (the concluded line names its op)
    runs = _agreed(["# Collective test concluded: all_reduce_perf", *_rows()], tmp_path, head=1)
    assert len(runs) == 1 and dict(runs[0])["meta"]["op"] == "all_reduce"


def test_a_bom_inside_a_line_is_the_lines_own():
    lines = [f"{HEADER[0]}{BOM}", f"# note {BOM}", BOM, ""]
    assert list(clean_lines(lines)) == [f"{HEADER[0]}{BOM}", f"# note {BOM}", "", ""]
    assert TextCleaner(lines).clean("".join(ln + "\n" for ln in lines)) == \
        "".join(ln + "\n" for ln in clean_lines(lines))


def test_out_and_in_place_values_in_row_order(tmp_path):
    # busbw/algbw kept in row order on every path: the rank count reads the last rows' values
    # (a block kept all out-of-place values, then all in-place ones: here the in-place ratio
    # alone says 4 ranks, the out-of-place one 2: rows that prove no one count, and say so),
    # and the footer's check sums them (float rounding)
    rows = [f"  {1 << (20 + i):>10}  {1 << (18 + i):>10}  float  sum  -1  100.0  {20 + i:.2f}  {20 + i:.2f}  0  "
            f"100.0  {10 + i:.2f}  {1.5 * (10 + i):.2f}  0" for i in range(10)]
    (run,) = _agreed([HEADER[0], HEADER[3], *rows], tmp_path, head=2)
    assert dict(run)["ranks"] is None
    assert any("busbw/algbw differs between rows" in w for w in dict(run)["meta"]["warnings"])
    rows = [f"  {1 << (20 + i):>10}  {1 << (18 + i):>10}  float  sum  -1  100.0  {20 + i:.2f}  {1.5 * (20 + i):.2f}  0  "
            f"100.0  {10 + i:.2f}  {1.5 * (10 + i):.2f}  0" for i in range(10)]
    (run,) = _agreed([HEADER[0], HEADER[3], *rows], tmp_path, head=2)
    assert dict(run)["ranks"] == 4


def test_a_role_never_closed_runs_to_the_end(tmp_path):
    # as clean_lines reads it: the lines after an open role are joined to it, whichever path
    lines = [*HEADER, *(f":mark:`{ln}`" for ln in _rows()), ":mark:`# Avg bus bandwidth    : 2.5", FAILURE]
    (run,) = _agreed(lines, tmp_path)
    assert dict(run)["errors"] == [f":mark:`# Avg bus bandwidth    : 2.5 {FAILURE}"]


def test_a_role_whose_end_was_lost(tmp_path):
    # a role runs to the backtick that makes the count even (clean_lines), not to the next
    # backtick: the row after a role whose closing line was lost is part of it
    rows = [f":mark:`{ln}`" for ln in _rows()]
    rows[3] = rows[3][:40]
    (run,) = _agreed([*HEADER, *rows, *FOOTER], tmp_path)
    assert dict(run)["status"] == "incomplete"


def test_backslashes_outside_roles_are_the_logs_own(tmp_path):
    # a document's escapes are undone only on the lines of a role; the block cleaner undid
    # them in every line of a block holding one
    error = "node1: Test NCCL failure C:\\nccl\\|x \\* 'err'"
    lines = [*HEADER, *(f":mark:`{ln}`" for ln in _rows()), *FOOTER, error]
    (run,) = _agreed(lines, tmp_path)
    assert dict(run)["errors"] == [error]


def test_a_prefix_on_a_roles_second_line(tmp_path):
    # clean_lines takes a launcher's prefix off each source line before joining a wrapped
    # role; the block cleaner left a prefix the log's start did not show inside the row
    rows = [f":mark:`{ln}`" for ln in _rows()]
    rows[3:4] = [rows[3][:40], "[pod/nccl-0/mpi] " + rows[3][40:]]
    (run,) = _agreed([*HEADER, *rows, *FOOTER], tmp_path)
    assert dict(run)["status"] == "complete"


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 13, 64])
def test_blocks_end_at_a_line_feed_not_at_a_lone_cr(size):
    # a block completed to its line end by readline stopped at a lone CR and got a line feed:
    # the progress before the CR became a line of its own and the line after it another
    text = "head\nab\rcd\ref\r\nx\r\ry\r\n\rz\nend\r"
    got = "".join(Lines([], ingest._Bounded(_Newlines(text))).blocks(size))
    assert got == text + "\n"


def test_crs_before_a_line_end_are_not_an_overwrite():
    # a terminal shows "abc" for "abc\r\r\n"; the block cleaner kept only what followed the
    # last CR (nothing), the line cleaner "abc"
    lines = ["# nThread 1 nGpus 1\r\r\n", "abc\r\r\r\n", "x\ry\r\r\n", "\r\n"]
    cleaner = TextCleaner(lines)
    assert cleaner.clean("".join(lines)) == "".join(ln + "\n" for ln in clean_lines(lines))
    assert list(clean_lines(lines)) == ["# nThread 1 nGpus 1", "abc", "y", ""]


@pytest.mark.parametrize("first_nccl", [True, False])
def test_a_part_that_cannot_be_read_refuses_the_file_saying_which(first_nccl):
    bad = "BabelStream\nVersion: 4.0\nFunction    Speed       Min (sec)   Max         Average\nCopy 1 2 3 4\n"
    huge = A3MEGA.read_text() * 40   # past the first 64 KiB: nccl-tests is read as it streams
    text = huge + bad if first_nccl else bad + A3MEGA.read_text()
    with pytest.raises(LogFormatError_import_mixed, match="the babelstream output in it: a stream table header without a rate"):
        parse_text(text, name="x.log")


@pytest.mark.parametrize("results, message", [
    ('"bw_avg": 46585.030000,\n\n', "without a message size"),                     # --output=bandwidth
    ('"MsgSize": 65536,\nbroken line\n', "a line it does not write"),
])
def test_perftest_out_json_refused(results, message):
    text = (DATA_import_more_formats / "perftest" / "SYNTHETIC-out_json-v25.04-ib_write_bw-mib.json").read_text()
    head = text[:text.index('"results": {') + len('"results": {\n')]
    with pytest.raises(LogFormatError_import_more_formats, match=message):
        parse_text(head + results + "}\n}\n", name="x")


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_logs_say_why(name):
    with pytest.raises(LogFormatError_import_nccl, match=REFUSED[name]):
        parse_text((DATA / name).read_text(), name=name)


def test_concatenated_logs_stream_run_by_run(monkeypatch):
    texts = [(DATA / n).read_text() for n in ("superbench-nccl_allreduce.log", "a3mega-h100-2node-all_reduce.txt",
                                               "superbench-nccl_broadcast.log")]
    lines = "".join(texts).splitlines(keepends=True)
    consumed = 0

    def source():
        nonlocal consumed
        for line in lines:
            consumed += 1
            yield line

    monkeypatch.setattr(common, "CHUNK_LINES", 16)   # a large log is read a block at a time
    it = parse_lines(source(), "cat.log")
    first = next(it)
    assert first.run.meta["op"] == "all_reduce" and first.run.ranks == 8
    assert consumed < len(lines) / 2  # yielded before the rest of the file was read
    rest = list(it)
    assert [r.run.meta["op"] for r in rest] == ["all_reduce", "broadcast"]
    assert [r.run.ranks for r in rest] == [16, 8]


def test_interleaved_output_of_several_processes_is_refused():
    with pytest.raises(LogFormatError_import_nccl_faults, match=r"sizes repeat out of order .*134217728, 134217728, 536870912"):
        runs_import_nccl_faults("issue294-h100-non-mpi-build-under-mpirun-interleaved-duplicate-rows.txt")


def test_a_table_nothing_names_is_refused_not_stored_as_a_generic_collective():
    # validation 0 (#wrong N/A in both placements), no redop or root column: all_gather,
    # alltoall and alltoallv print such a table alike
    with pytest.raises(LogFormatError_import_nccl_faults, match="does not say which collective it measured.*fit "
                                                                "all_gather, alltoall, alltoallv"):
        one("superbench-nccl_alltoall.log", as_name="sb.log")
    # no version line: before nccl-tests 2.13.1 alltoall printed a number in place too, so the
    # table's own columns cannot tell all_gather from alltoall; the file name can
    with pytest.raises(LogFormatError_import_nccl_faults, match="does not say which collective it measured"):
        one("skypilot-head-prefix-plus-tag-output-h200-16rank-allgather-unnamed.txt", as_name="sky.log")


def test_json_that_cannot_be_recovered_is_an_error():
    with pytest.raises(LogFormatError_import_nccl_files):
        parse_text('{"nccl_version": 1, "results": [ {"size": ', tool="nccl-tests")


def test_repeated_sweep_without_its_footer_is_still_refused():
    # processes writing into one stream each print a footer; rows repeated with no footer after
    # them (a log cut short) cannot be told from such output
    text = "\n".join(ln for ln in with_cycles(GH200, 2).splitlines() if not ln.startswith("# Avg bus"))
    with pytest.raises(LogFormatError_import_nccl, match="interleaved.*-N"):
        parse_text(text, name="x.log")


def test_rows_of_several_runs_are_still_refused():
    # one sweep whose second half comes again out of order: not a -N repeat
    text = (DATA / GH200).read_text()
    body = [ln for ln in text.splitlines() if is_row(ln)]
    mixed = text.replace("\n".join(body), "\n".join(body + body[5:] + body[:5]))
    with pytest.raises(LogFormatError_import_nccl, match="interleaved"):
        parse_text(mixed, name="x.log")


def test_perftest_without_a_complete_row_is_refused():
    with pytest.raises(LogFormatError_import_net_tools, match="no perftest results"):
        runs("perftest", "perftest-issue234-server-truncated-row.txt")


def test_iperf3_invalid_json_is_refused():
    with pytest.raises(LogFormatError_import_net_tools):
        parse_text((DATA_import_net_tools / "iperf3" / "iperf-issue613-udp-invalid-json-nan.txt").read_text(), tool="iperf3")


def test_perftest_unknown_unit_is_refused():
    text = (DATA_import_net_tools / "perftest" / "elizabetht-spark-ib_write_bw-roce-gb10-mtu1024.txt").read_text()
    with pytest.raises(LogFormatError_import_net_tools, match="unknown unit 'KB/sec'"):
        parse_text(text.replace("MB/sec", "KB/sec"), name="x.txt")


def test_iperf2_output_is_refused():
    with pytest.raises(LogFormatError_import_net_tools, match="iperf 2 output"):
        runs("iperf3", "pkb-NOT-iperf3-iperf2-enhanced-udp-tcp-multi.txt")
    with pytest.raises(LogFormatError_import_net_tools, match="unknown format"):   # iperf3 --version: no result at all
        runs("iperf3", "moler-version-3.12.txt")


def test_iperf3_json_stream_of_intervals_only_is_refused():
    doc = json.loads((DATA_import_net_tools2 / "iperf3" / "v3.12-bidir-loopback-json.json").read_text())
    text = json.dumps({"event": "interval", "data": doc["intervals"][0]}) + "\n"
    with pytest.raises(LogFormatError_import_net_tools, match="no iperf3 results"):   # a stream cut before its end event
        parse_text(text, name="x", tool="iperf3")


def test_a_table_whose_columns_are_unknown_is_refused():
    text = "BabelStream\nFunction    Speed       Min (sec)   Max         Average\nCopy 1 2 3 4\n"
    with pytest.raises(LogFormatError_import_stream_forms, match="without a rate unit"):
        parse_text(text, name="x.txt")


def test_values_left_out_of_a_document_are_refused_with_why():
    with pytest.raises(LogFormatError_import_stream_forms, match="without their values"):
        runs_import_stream_forms("babelstream-issue54-v3.3-csv-and-triad-only-elided.txt")


@pytest.mark.parametrize("source, old, new", [
    (SWEEP, "│  30.660 GB/s │", "│ │"),                          # bandwidth cell emptied
    (SWEEP, "268435456 bytes │ C1 -> C0:4", "2684354x56 bytes │ C1 -> C0:4"),   # byte count garbled
    (CONFIG, "│   67108864 bytes  │", "│ {  │"),
    (P2P, "Unidirectional copy peak", "Unidirectional copy peak \\"),
])
def test_transferbench_damaged_cells_are_refused_or_left_out(source, old, new, tmp_path):
    """A cell that is not a number is refused with its line, or (where TransferBench itself
    prints N/A) left out; never an IndexError or ValueError from inside the parser."""
    text = damaged(tmp_path, source, old, new).read_text()
    try:
        runs = parse_text(text)
    except LogFormatError_ingest_malformed as e:
        assert "line" in str(e)
    else:
        assert runs and all(math.isfinite(m.value) for r in runs for m in r.measurements)


def test_transferbench_transfer_with_damaged_byte_count_is_refused(tmp_path):
    text = damaged(tmp_path, SWEEP, "268435456 bytes │ C1 -> C0:4", "2684354x56 bytes │ C1 -> C0:4").read_text()
    with pytest.raises(LogFormatError_ingest_malformed, match=r"byte count '2684354x56 bytes'"):
        parse_text(text)


def test_binary_data_without_newlines_is_refused_after_reading_its_start(tmp_path):
    path = tmp_path / "zeros.bin"
    path.write_bytes(bytes(4 << 20))
    raw = _Counting(path)
    with _text_of(raw) as f, pytest.raises(LogFormatError_ingest_malformed, match="^binary data, not a text log$"):
        list(iter_runs(f))
    assert raw.read_bytes <= 1 << 20


@pytest.mark.parametrize("head", ["", A3MEGA.read_text(), SWEEP.read_text()])
def test_a_line_longer_than_16_mib_is_refused_without_reading_on(tmp_path, head):
    path = tmp_path / "long.log"
    with open(path, "w") as f:
        f.write(head)
        f.write("x" * (17 << 20))
        f.write("\n" + head)
    raw = _Counting(path)
    with _text_of(raw) as f, pytest.raises(LogFormatError_ingest_malformed) as e:
        list(iter_runs(f, path=str(path)))
    assert str(e.value) == "not a text log: a line longer than 16 MiB"
    assert raw.read_bytes <= len(head) + (18 << 20)


@pytest.mark.parametrize("lines", [["Duration: 1.2", "Duration: 1.3"], ["error: x", "error: y"],
                                   ["iperf3: error - the server is busy", "iperf3: interrupt - the client has terminated"]])
def test_a_tool_s_own_label_on_every_line_of_a_short_log_is_no_host(lines):
    assert list(clean_lines(lines)) == lines


def test_a_single_line_keeps_what_looks_like_a_host():
    assert list(clean_lines(["node1: Test NCCL failure"])) == ["node1: Test NCCL failure"]


def test_a_short_log_behind_two_hosts_keeps_them():
    lines = ["node1: a", "node2: b", "node1: c"]
    assert list(clean_lines(text_lines("\n".join(lines)))) == lines


def test_json_behind_prefixes_with_a_bare_line_says_why():
    lines = [f"0: {ln}" for ln in text_tool_logs("iperf3", "v3.12-bidir-loopback-json.json").split("\n")]
    lines.insert(3, "srun: error: task 1 exited")
    with pytest.raises(LogFormatError_ingest_common, match=r"prefix \('0: '\) but line 4 has none"):
        parse_text("\n".join(lines))


def test_babelstream_csv_with_only_a_cut_row_says_why_nothing_is_stored():
    log = text_tool_logs("babelstream", "hpcbench-v3.3-cuda-k20m-csv-trailing-comma.txt")
    full = next(ln for ln in log.split("\n") if ln.startswith("Copy,"))
    with pytest.raises(LogFormatError_tool_logs, match="cut short"):
        parse_text(log[:log.index(full)] + "Copy,100,33554432,8,152212,0.0")


@pytest.mark.parametrize("make", [_document, _random_text])
def test_bulk_and_per_role_agree(make, monkeypatch):
    rng = random.Random(20261126)
    bulk_taken = 0
    for _ in range(3000):
        blocks = _blocks(rng, make(rng))
        bulk_taken += any(common._plain_roles(b) is not None for b in blocks if ":mark:`" in b)
        assert _undone(blocks, True, monkeypatch) == _undone(blocks, False, monkeypatch), blocks
    assert bulk_taken > 200, bulk_taken   # the bulk path was exercised, not only refused


def test_bulk_path_takes_a_quoted_log_and_refuses_what_it_cannot_do():
    quoted = ":mark:`# Rank 0 Pid 1 on h device 0 [0000:05:00.0] AMD\nInstinct MI300X`\n\n:mark:`8 2 float`\n"
    assert common._plain_roles(quoted) == "# Rank 0 Pid 1 on h device 0 [0000:05:00.0] AMD Instinct MI300X\n\n8 2 float\n"
    for text in (":mark:`a \\| b`\n",            # an escape on a role's line
                 ":mark:`a` **b**\n",            # bold on a role's line
                 ":mark:`a\n  b`\n",             # whitespace at the wrap: strip() takes it off
                 ":mark:`a\n[1,0]<stdout>:b`\n",  # a launcher prefix where the role wrapped
                 ":mark:`a\nb` \n",              # whitespace after the wrapped role's end
                 ":mark:`a` `\n",                # a stray backtick
                 ":mark:`a\n"):                  # open at the block's end
        assert common._plain_roles(text) is None, text
    # an escape on a line without a role is the log's own, and stays
    assert common._plain_roles("> mpirun \\\n:mark:`x`\n") == "> mpirun \\\nx\n"
