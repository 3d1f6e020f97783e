"""Tests of clusterbench.cli.commands.preflight: ``clusterbench preflight``."""

import json
from pathlib import Path

import pytest
from bench_cli import _cli
from host_doubles import BROKEN, CUDA, DATA, H100, LOG, MI300X
from judge_helpers import cli
from junit_xml import _cases, _read
from sysfs_trees import SYSFS

from clusterbench.cli import main
from clusterbench.cli.argv_check import check_argv
from clusterbench.cli.commands.preflight import expectations_from
from clusterbench.envinfo import torchcheck
from clusterbench.errors import UsageError
from clusterbench.preflight import Expectations, exit_code, run_checks
from clusterbench.preflight import checks as c


def test_preflight_cli_fails_on_wrong_build(monkeypatch, capsys):
    from clusterbench.envinfo import inventory

    real = inventory.collect
    monkeypatch.setattr(inventory, "collect", lambda root="/", use_libraries=None, environ=None:
                        {**real(MI300X, use_libraries=False), "torch": CUDA.to_dict()})
    for var in torchcheck.VISIBILITY_VARS:
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(SystemExit) as e:
        main(["preflight", "--json", "--kernel-log", str(DATA / "README.md")])
    assert e.value.code == 1
    out = capsys.readouterr().out
    assert '"torch_gpus"' in out and "ROCm build" in out


def test_cli_json_and_exit_codes(tmp_path, capsys):
    log = tmp_path / "dmesg.txt"
    log.write_text(LOG)
    code, out, _ = _cli(["preflight", "--root", str(MI300X), "--kernel-log", str(log), "--json"], capsys)
    *rows, summary = [json.loads(line) for line in out.splitlines()]
    assert code == 1 and {r["kind"] for r in rows} == {"check"} and len({r["host"] for r in rows}) == 1
    assert {r["check"]: r["status"] for r in rows}["kernel_log"] == "fail"
    assert summary["status"] == "fail" and summary["exit_code"] == 1 and summary["host"] == rows[0]["host"]
    code, out, err = _cli(["preflight", "--root", str(BROKEN)], capsys)
    assert code == 0 and "not-applicable" in out and "# preflight: warning" in err


def test_cli_expect_options(capsys):
    code, out, _ = _cli(["preflight", "--root", str(H100), "--expect-nic-speed", "400G", "--nic", "ibp26s0",
                         "--json"], capsys)
    status = {r["check"]: r["status"] for r in map(json.loads, out.splitlines()) if r["kind"] == "check"}
    # only the named interface and its RDMA device are held to the speed
    assert status["nic"] == "ok" and status["rdma"] == "ok"
    assert code == 1 and status["pcie_link"] == "fail"  # the x8 GPU
    code, _, _ = _cli(["preflight", "--root", str(MI300X), "--expect-gpus", "2", "--expect-memory-partition", "NPS4"], capsys)
    assert code == 1


@pytest.mark.parametrize("args,message", [
    (["--expect-nic-speed", "fast"], "--expect-nic-speed"),
    (["--kernel-log", "/nonexistent/dmesg.txt"], "--kernel-log"),
    (["--expect-gpus", "-1"], "--expect-gpus"),
])
def test_cli_usage_errors(args, message, capsys):
    code, _, err = _cli(["preflight", "--root", str(BROKEN), *args], capsys)
    assert code == 2 and err.startswith("clusterbench: error:") and message in err


def test_preflight_junit_fail_and_not_applicable(capsys, tmp_path):
    out = tmp_path / "pre.xml"
    log = tmp_path / "dmesg.txt"
    log.write_text("[  1.0] NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.\x1b[0m\n")
    rc, _, err = cli(capsys, "preflight", "--root", str(SYSFS / "h100-node"), "--kernel-log", str(log),
                     "--expect-gpus", "8", "--node", "gpu07", "--junit", str(out))
    assert rc == 1, err
    root = _read(out)
    suite = root.find("testsuite")
    assert suite.get("name") == "preflight gpu07" and suite.get("hostname") == "gpu07"
    cases = _cases(root)
    assert cases["gpu_count"].find("failure") is not None
    assert "expected 8" in cases["gpu_count"].find("failure").get("message")
    kl = cases["kernel_log"].find("failure")
    assert kl is not None and "Xid" in kl.text and "\ufffd" in kl.text   # ESC is not XML: replaced


@pytest.mark.parametrize("argv, words", [
    (["preflight", "--expect-nic-speed", "1X"], "--expect-nic-speed '1X'"),
    (["preflight", "--expect-model", " "], "--expect-model: an empty value"),
    (["preflight", "--apply"], "--apply and --undrain need --on-fail"),
])
def test_preflight_values_are_checked_as_preflight_checks_them(capsys, argv, words):
    with pytest.raises(UsageError, match="^step: ") as e:
        check_argv(argv, "step", values=True)
    assert words in str(e.value)
    rc, _, own = cli(capsys, *argv)
    assert rc == 2 and own.endswith(f"error: {str(e.value).removeprefix('step: ')}\n"), own
    check_argv(["preflight", "--expect-nic-speed", "400G", "--expect-model", "H100"], "step", values=True)


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
    rc, out, err = cli(capsys, "preflight", "--root", node, "--json")
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
    rc, out, err = cli(capsys, "preflight", "--root", H100, *args)
    assert rc == 2 and out == "", out
    assert err.count("\n") == 1 and err.startswith("clusterbench: error:") and message in err
    assert len(err) < 400


def test_text_and_json_agree_on_odd_states(node: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (node / "sys/class/infiniband/mlx5_1/ports/1/rate").write_text("Unknown\n")
    (node / "sys/class/net/ens1f0np0/speed").write_text("4294967295\n")
    args = ("preflight", "--root", node, "--expect-nic-speed", "100G", "--nic", "ens1f0np0")
    rc_text, out, err = cli(capsys, *args)
    text = {line.split()[1]: line.split()[0] for line in out.splitlines() if not line.startswith(" ")}
    rc_json, out, _ = cli(capsys, *args, "--json")
    lines = [json.loads(line) for line in out.splitlines()]
    assert text == {d["check"]: d["status"] for d in lines if d["kind"] == "check"}
    assert text["nic"] == text["rdma"] == c.WARNING   # one port, one verdict from both checks
    assert rc_text == rc_json == lines[-1]["exit_code"] == 1   # the tree's x8 GPU
    assert f"# preflight: {lines[-1]['status']}" in err


@pytest.mark.parametrize("option", ["--junit", "--kernel-log"])
def test_an_empty_file_name_is_refused(capsys, option):
    """`--junit "$JUNIT_FILE"` with the variable unset wrote nothing and exited as if it had."""
    rc, out, err = cli(capsys, "preflight", "--root", H100, option, "")
    assert rc == 2 and out == "", err
    assert err.strip() == f"clusterbench: error: {option}: an empty file name"
