"""nccl-tests text logs (ingest/nccl_tests.py): what a library's warnings do to a run (nothing
but be kept with it), on a real log (tests/data/nccl-tests, sources in its README)."""

from pathlib import Path

import pytest

from clusterbench.ingest import LogFormatError, parse_text

DATA = Path(__file__).parent.parent / "data" / "nccl-tests"
WARNINGS = ["node1:4242:4242 [0] init.cc:100 NCCL WARN NET/Plugin: Could not find: libnccl-net.so",
            "[1719127610.064172] [worker3:2670 :0]     ucp_context.c:1176 UCX  WARN  network device 'mlx5_0:1' "
            "is not available"]


def test_warnings_before_a_header_are_no_run_of_their_own():
    text = (DATA / "a3mega-h100-2node-all_reduce.txt").read_text()
    (plain,) = parse_text(text, name="a.txt")
    (r,) = parse_text("\n".join(WARNINGS) + "\n" + text, name="a.txt")
    assert r.run.status == plain.run.status == "complete"
    assert r.run.errors == [WARNINGS[0]]   # kept with the run that follows, for the reader
    assert [m.value for m in r.measurements] == [m.value for m in plain.measurements]
    assert r.run.meta["op_from"] == plain.run.meta["op_from"]


def test_warnings_alone_are_no_results():
    with pytest.raises(LogFormatError, match="no nccl-tests results found"):
        parse_text("\n".join(WARNINGS) + "\n", tool="nccl-tests", name="w.txt")
