"""Preflight on odd machine states and odd input: speeds and rates that cannot be read (NIC and
RDMA alike), the kernel's unknown speed read unsigned, PCIe links whose current state is unknown,
a check that raises, expected speeds in every unit, and bad input refused before any check runs."""

import json
import shutil
from pathlib import Path

import pytest

from clusterbench.cli import main
from clusterbench.cli.commands.preflight import expectations_from
from clusterbench.preflight import Expectations, exit_code, run_checks
from clusterbench.preflight import checks as c

H100 = Path(__file__).parent / "data" / "sysfs" / "h100-node"


@pytest.fixture
def node(tmp_path: Path) -> Path:
    """A copy of the H100 tree to change: the RoCE port of mlx5_1 is ens1f0np0 (100 Gb/s)."""
    root = tmp_path / "node"
    shutil.copytree(H100, root, symlinks=True)
    return root


def _by_check(root: Path, exp: Expectations) -> dict[str, c.CheckResult]:
    return {r.check: r for r in run_checks(exp, root=root)}


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in args])
    out = capsys.readouterr()
    return int(e.value.code or 0), out.out, out.err


def test_an_rdma_rate_that_cannot_be_read_is_not_an_expectation_met(node: Path) -> None:
    (node / "sys/class/infiniband/mlx5_1/ports/1/rate").write_text("Unknown\n")
    res = _by_check(node, Expectations(nic_speed_gbps=100))
    rdma = res["rdma"]
    assert rdma.status == c.WARNING and rdma.summary == "1 of unknown rate"
    assert "mlx5_1 port 1" in rdma.evidence[0] and "cannot be checked" in rdma.evidence[0]
    (node / "sys/class/net/ens1f0np0/speed").write_text("-1\n")   # the same port as the nic check sees it
    assert _by_check(node, Expectations(nic_speed_gbps=100))["nic"].status == c.WARNING
    assert _by_check(node, Expectations())["rdma"].status == c.OK   # nothing expected: nothing to check


@pytest.mark.parametrize("speed", ["4294967295", "99999999999999999999999", "0", "-1", "fast"])
def test_a_nic_speed_that_is_no_speed_is_unknown(node: Path, speed: str) -> None:
    (node / "sys/class/net/ens1f0np0/speed").write_text(speed + "\n")
    nic = _by_check(node, Expectations(nic_speed_gbps=100))["nic"]
    # the kernel's SPEED_UNKNOWN printed unsigned is not 4.3 Pb/s that passes every expectation
    assert nic.status == c.WARNING and "1 of unknown speed" in nic.summary
    assert any(e.startswith("ens1f0np0 ") and "cannot be checked" in e for e in nic.evidence)


@pytest.mark.parametrize("speed", [-1000, 2**32 - 1, "100000", True, 1.5])
def test_nic_speed_from_an_inventory_of_another_shape(speed: object) -> None:
    """An inventory handed in (``run_checks(inventory=...)``) holds what its writer put there."""
    inv = {"nics": [{"name": "eth0", "operstate": "up", "speed_mbps": speed}]}
    r = c.nics(inv, Expectations(nic_speed_gbps=1))
    assert r.status == c.WARNING and r.summary == "1 of unknown speed"


@pytest.mark.parametrize("link,status,text", [
    ({"current_width": 16, "max_width": 16, "current_speed_gts": None, "max_speed_gts": 32.0},
     c.WARNING, "?/32.0 GT/s: current speed unknown"),
    ({"current_width": None, "max_width": 16, "current_speed_gts": None, "max_speed_gts": 32.0},
     c.WARNING, "x?/x16, ?/32.0 GT/s: current width and speed unknown"),
    ({"current_width": 0, "max_width": 16, "current_speed_gts": None, "max_speed_gts": 32.0},
     c.FAIL, "link down (width x0, max x16)"),
    ({"current_width": 8, "max_width": 16, "current_speed_gts": 32.0, "max_speed_gts": 32.0},
     c.FAIL, "width x8 < x16"),
    ({"current_width": 16, "max_width": 16, "current_speed_gts": 2.5, "max_speed_gts": 32.0},
     c.WARNING, "speed 2.5 < 32 GT/s"),
    ({"current_width": 16, "max_width": 16, "current_speed_gts": 32.0, "max_speed_gts": 32.0},
     c.OK, "x16/x16, 32.0/32.0 GT/s (Gen5)"),
])
def test_pcie_link_states(link: dict[str, object], status: str, text: str) -> None:
    inv = {"pcie": [{"bdf": "0000:18:00.0", "kind": "gpu", "vendor": "NVIDIA", "driver": "nvidia", "link": link}]}
    r = c.pcie_links(inv, Expectations())
    assert r.status == status and text in r.evidence[0], r
    if status != c.OK:
        assert "at maximum" not in r.summary


def test_pcie_link_current_speed_unknown_in_sysfs(node: Path) -> None:
    (node / "sys/bus/pci/devices/0000:18:00.0/current_link_speed").write_text("Unknown\n")
    r = _by_check(node, Expectations())["pcie_link"]
    assert r.status == c.FAIL   # the tree's x8 GPU still fails; the unknown link is not "fine"
    assert any(e.startswith("0000:18:00.0 ") and "current speed unknown" in e for e in r.evidence)


def test_a_check_that_raises_fails_alone(node: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    def broken(inv: object, exp: object) -> c.CheckResult:
        raise KeyError("name")

    monkeypatch.setattr(c, "nics", broken)
    results = run_checks(Expectations(), root=node)
    res = {r.check: r for r in results}
    assert list(res) == ["gpu_count", "torch_gpus", "gpu_model", "gpu_partition", "pcie_link", "pcie_aer",
                         "gpu_ecc", "kernel_log", "nic", "rdma"]
    assert res["nic"].status == c.FAIL and res["nic"].evidence == ["KeyError: 'name'"]
    assert res["rdma"].status == c.OK and exit_code(results) == 1
    rc, out, err = _cli(capsys, "preflight", "--root", node, "--json")
    lines = [json.loads(line) for line in out.splitlines()]
    assert rc == 1 and "internal error" not in err
    assert [d["check"] for d in lines if d["kind"] == "check"] == list(res)
    assert lines[-1]["kind"] == "summary" and lines[-1]["exit_code"] == 1 and lines[-1]["counts"]["fail"] == 2


@pytest.mark.parametrize("text,gbps", [
    ("100G", 100.0), ("100Gbps", 100.0), ("12.5GB/s", 100.0), ("100", 100e-9), ("1.6T", 1600.0),
    ("400 g", 400.0), ("1gbit", 1.0), ("100Gbit", 100.0), ("25000M", 25.0), ("400Gb/s", 400.0),
])
def test_expected_nic_speed_units(text: str, gbps: float) -> None:
    exp = expectations_from(None, None, text, (), None, None)
    assert exp.nic_speed_gbps == pytest.approx(gbps)


@pytest.mark.parametrize("args,message", [
    (["--expect-nic-speed", "0"], "must be positive"),
    (["--expect-nic-speed", "-1"], "--expect-nic-speed '-1'"),
    (["--expect-nic-speed", "1e400"], "--expect-nic-speed '1e400'"),
    (["--expect-nic-speed", "1" + "0" * 400 + "G"], "too large"),
    (["--expect-nic-speed", ""], "--expect-nic-speed: an empty value"),
    (["--expect-model", " "], "--expect-model: an empty value"),
    (["--nic", ""], "--nic: an empty value"),
    (["--node", "gpu\x1b01", "--on-fail", "drain"], "invalid node name 'gpu\\x1b01'"),
    (["--node", "gpu[01-02]", "--on-fail", "drain", "--json"], "invalid node name 'gpu[01-02]'"),
])
def test_bad_input_is_one_line_and_exit_2_before_any_check(args: list[str], message: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _cli(capsys, "preflight", "--root", H100, *args)
    assert rc == 2 and out == "", out
    assert err.count("\n") == 1 and err.startswith("clusterbench: error:") and message in err
    assert len(err) < 400


def test_text_and_json_agree_on_odd_states(node: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (node / "sys/class/infiniband/mlx5_1/ports/1/rate").write_text("Unknown\n")
    (node / "sys/class/net/ens1f0np0/speed").write_text("4294967295\n")
    args = ("preflight", "--root", node, "--expect-nic-speed", "100G", "--nic", "ens1f0np0")
    rc_text, out, err = _cli(capsys, *args)
    text = {line.split()[1]: line.split()[0] for line in out.splitlines() if not line.startswith(" ")}
    rc_json, out, _ = _cli(capsys, *args, "--json")
    lines = [json.loads(line) for line in out.splitlines()]
    assert text == {d["check"]: d["status"] for d in lines if d["kind"] == "check"}
    assert text["nic"] == text["rdma"] == c.WARNING   # one port, one verdict from both checks
    assert rc_text == rc_json == lines[-1]["exit_code"] == 1   # the tree's x8 GPU
    assert f"# preflight: {lines[-1]['status']}" in err


def test_a_check_that_cannot_run_fails_but_drains_no_node():
    """A defect inside a check hits every node alike: it fails the preflight (exit 1) but is not
    a reason --on-fail takes a node out for."""
    from clusterbench.preflight import COULD_NOT_RUN, node_problems
    from clusterbench.preflight.checks import FAIL, OK, CheckResult
    results = [CheckResult("nic", FAIL, COULD_NOT_RUN, ["KeyError: 'x'"]),
               CheckResult("gpu_count", OK, "8 GPUs", []), CheckResult("rdma", FAIL, "mlx5_1 port 1 down", [])]
    assert node_problems(results) == ["preflight rdma: mlx5_1 port 1 down"]
    assert node_problems(results[:2]) == []
