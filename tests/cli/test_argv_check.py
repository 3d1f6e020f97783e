"""Tests of clusterbench.cli.argv_check: a clusterbench command line parsed by the real CLI, without running it."""

from __future__ import annotations

import pytest

from clusterbench.bench.net.matrix import MAX_RDMA_QPS
from clusterbench.cli.argv_check import check_argv
from clusterbench.errors import UsageError

REFUSED = [
    (["-t", "1e-300"], "--duration must be 0.01..86400 s"),          # nothing sent: was 0 GB/s stored
    (["-t", "4", "--timeout", "2"], "at most half of --timeout 2 s"),  # was a gloo error mid-run
    (["--latency-iters", "99999999999999999999"], "--latency-iters must be 1..1000000"),
    (["--latency-bytes", "1X"], "invalid --latency-bytes '1X'"),
    (["--latency-bytes", "2G"], "--latency-bytes must be 1..1073741824"),
    (["--link-rate", ""], "invalid rate ''"),                         # was dropped without a word
    (["--rdma-gpu", "10.0.0.1"], "is not a perftest GPU flag"),       # would be ib_write_bw's server
    (["--rdma-device", "-x"], "is not an RDMA device name"),
]


@pytest.mark.parametrize("argv", [
    ["stream", "--float"], ["stream", "--dtype", "float", "--sizes", "1K:4K"], ["stream", "-s", "1K"],
    # indices a node may have: only the node can say it has them
    ["stream", "--devices", "0,7"], ["gemm", "--devices", " 3 , 1 "], ["transfer", "--devices", "all"],
    ["stream", "--device", "cpu", "--devices", "0"], ["gemm", "--device", "cuda", "--devices", "15"],
])
def test_lines_only_a_node_can_judge_pass(argv):
    check_argv(argv, "step", values=True)


@pytest.mark.parametrize("argv", [["env"], ["sweep", "--hosts", "a,b"], ["launch", "mpi", "--hosts", "a,b", "--",
                                                                          "sweep", "--hosts", "a,b"]])
def test_lines_that_run_as_they_are_pass(argv):
    check_argv(argv, "step", values=True)


def test_launch_still_needs_its_command():
    with pytest.raises(UsageError, match="no command"):
        check_argv(["launch", "mpi", "--hosts", "a,b"], "step", values=True)


@pytest.mark.parametrize(("args", "words"), REFUSED, ids=[" ".join(a) for a, _ in REFUSED])
def test_bad_values_refused_up_front(args: list[str], words: str) -> None:
    with pytest.raises(UsageError, match="net: .*" + words.replace("(", r"\(").replace(".", r"\.")):
        check_argv(["net", *args], "net", values=True)


@pytest.mark.parametrize("args", [["--latency-bytes", "1K"], ["--latency-bytes", "1.5K"],
                                  ["-t", "100", "--timeout", "300"], ["--rdma-gpu", "--use_cuda=0"],
                                  ["--rdma-device", "mlx5_0"]])
def test_good_values_pass(args: list[str]) -> None:
    check_argv(["net", *args], "net", values=True)


@pytest.mark.parametrize("qps", ["16385", "100000000"])
def test_sweep_and_qualify_check_refuse_it(qps: str) -> None:
    with pytest.raises(UsageError, match=f"^net: --rdma-qps must be 1..{MAX_RDMA_QPS}"):
        check_argv(["net", "--rdma", "--rdma-qps", qps], "net", values=True)
