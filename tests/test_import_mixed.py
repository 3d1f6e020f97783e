"""A file holding the output of several tools keeps every tool's runs (each part read by the tool
that wrote it), or is refused saying which part; an import batch with a damaged or unreadable
file imports the others and exits 2 (issue 18). Logs are real (tests/data)."""

import gzip
from pathlib import Path

import pytest

from clusterbench.cli import main
from clusterbench.ingest import LogFormatError, parse_text, split_tools
from clusterbench.store import Store

DATA = Path(__file__).parent / "data"
A3MEGA = DATA / "nccl-tests" / "a3mega-h100-2node-all_reduce.txt"
WOHLBIER = DATA / "nccl-tests" / "wohlbier-dgx2-v100-5-collectives-old-error-column-running-lines.txt"
TITANXP = DATA / "babelstream" / "repo-results-v3.3-titanxp-cuda.txt"
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


BOM = "\ufeff"
MIXED = [(A3MEGA, TITANXP), (TITANXP, A3MEGA), (WOHLBIER, OSU_BW, A3MEGA), (OSU_BW, PERFTEST, HIPBLASLT)]


@pytest.mark.parametrize("paths", MIXED, ids=["nccl-stream", "stream-nccl", "nccl-osu-nccl", "osu-perftest-hipblaslt"])
@pytest.mark.parametrize("copies", [1, 40], ids=["whole", "streamed"])   # the first past 64 KiB: read as it streams
@pytest.mark.parametrize("line_end", ["\n", "\r\n"], ids=["LF", "CRLF"])
def test_a_bom_before_another_tools_output(paths, copies, line_end):
    # the later tools' output saved with a byte order mark: the cleaners drop it, but the
    # split between tools was looked for on the raw text, where it hid a tool's first line (a
    # small nccl-tests log then BabelStream: the BabelStream run was lost in the nccl-tests part)
    texts = [paths[0].read_text() * copies] + [p.read_text() for p in paths[1:]]
    mixed = parse_text(BOM.join(texts).replace("\n", line_end), name="session.log")
    want = parse_text("".join(texts).replace("\n", line_end), name="session.log")
    assert [r.run.meta["tool"] for r in mixed] == [r.run.meta["tool"] for r in want]
    assert records(mixed) == records(want)
    assert [r.run.status for r in mixed] == [r.run.status for r in want]


def _prefixed(text, prefix):
    return "".join(prefix + line + "\n" for line in text.split("\n") if line)


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
    text = A3MEGA.read_text() + BOM + TITANXP.read_text()
    parts = split_tools(text, "nccl-tests")
    assert parts == split_tools(text.replace(BOM, ""), "nccl-tests")
    assert [t for t, _ in parts] == ["nccl-tests", "babelstream"]


def test_a_command_line_before_another_tools_output_goes_with_it():
    text = (A3MEGA.read_text() + "$ mpirun -n 2 osu_bw -d cuda D H\n"
            + "".join(ln for ln in OSU_BW.read_text().splitlines(keepends=True) if "mpirun" not in ln))
    nccl, osu = parse_text(text, name="x.log")
    assert osu.run.meta["log_command"].startswith("mpirun -n 2 osu_bw") and osu.measurements[0].params["buffers"] == "D H"
    assert records([nccl]) == records(alone(A3MEGA))


@pytest.mark.parametrize("first_nccl", [True, False])
def test_a_part_that_cannot_be_read_refuses_the_file_saying_which(first_nccl):
    bad = "BabelStream\nVersion: 4.0\nFunction    Speed       Min (sec)   Max         Average\nCopy 1 2 3 4\n"
    huge = A3MEGA.read_text() * 40   # past the first 64 KiB: nccl-tests is read as it streams
    text = huge + bad if first_nccl else bad + A3MEGA.read_text()
    with pytest.raises(LogFormatError, match="the babelstream output in it: a stream table header without a rate"):
        parse_text(text, name="x.log")


def cli(capsys, *argv):
    with pytest.raises(SystemExit) as e:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def test_a_batch_with_damaged_gzip_files_imports_the_others(capsys, tmp_path):
    db = str(tmp_path / "r.db")
    data = gzip.compress("".join(p.read_text() for p in (A3MEGA, WOHLBIER, A3MEGA)).encode())
    header_only = tmp_path / "bad-header.log.gz"           # a valid gzip header, then junk
    header_only.write_bytes(data[:10] + bytes(range(256)) * 4)
    late = tmp_path / "bad-later.log.gz"                   # damaged after the first runs were read
    late.write_bytes(data[: len(data) * 3 // 4] + b"\x00" * 64 + data[len(data) * 3 // 4 + 64:])
    locked = tmp_path / "locked.log"
    locked.write_text(A3MEGA.read_text())
    locked.chmod(0)
    good = tmp_path / "good.log"
    good.write_text(TITANXP.read_text())
    rc, out, err = cli(capsys, "import", str(header_only), str(late), str(locked), str(good), "--db", db)
    assert rc == 2
    lines = err.splitlines()
    assert lines[0].startswith(f"clusterbench: error: {header_only}: corrupt compressed data: Error -3")
    assert lines[1].startswith(f"clusterbench: error: {late}: corrupt compressed data")
    import os
    if os.geteuid() != 0:   # root reads a file without permissions
        assert lines[2] == f"clusterbench: error: {locked}: Permission denied"
    assert lines[-1].endswith("files not imported")
    with Store.open(db) as s:
        runs = s.list_runs()
    assert str(good) in {r.meta["file"] for r in runs}
    assert not [r for r in runs if r.meta["file"] in (str(late)[:-3], str(header_only)[:-3])]   # none half-stored
