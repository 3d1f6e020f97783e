"""Preflight: kernel log parsing on real message formats, checks on fake trees, CLI exit codes."""

import json
from pathlib import Path

import pytest

from clusterbench.cli import main
from clusterbench.preflight import Expectations, exit_code, kernel_log, overall, record, run_checks
from clusterbench.preflight import checks as c

DATA = Path(__file__).parent / "data" / "sysfs"
H100, MI300X, BROKEN = DATA / "h100-node", DATA / "mi300x-node", DATA / "broken-node"

# Message formats as the drivers print them (dmesg with timestamps, and one raw /dev/kmsg record).
LOG = """\
[    1.012345] pcieport 0000:00:01.1: AER: enabled with IRQ 28
[    3.000000] amdgpu: ATOM BIOS: 113-M3000100-102
[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.
[ 1235.000000] NVRM: Xid (PCI:0000:3b:00): 13, pid=4321, name=python, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address
[   12.100000] pcieport 0000:00:01.1: AER: Corrected error received: 0000:01:00.0
[   12.200000] pcieport 0000:00:01.1: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)
[   13.100000] pcieport 0000:80:03.1: AER: Uncorrected (Fatal) error received: 0000:81:00.0
[  500.100000] amdgpu 0000:c1:00.0: amdgpu: GPU reset begin!
[  500.200000] amdgpu 0000:c1:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:8 pasid:32770)
[  500.300000] [drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout, signaled seq=123, emitted seq=125
4,812,1500300000,-;NVRM: Xid (PCI:0000:5d:00): 48, pid=1, name=x, An uncorrectable double bit error
"""


def test_kernel_log_parse():
    found = [(f.kind, f.severity, f.device, f.detail) for f in kernel_log.parse(LOG)]
    assert found == [
        ("xid", "fail", "0000:3b:00", "Xid 79"),
        ("xid", "warning", "0000:3b:00", "Xid 13"),  # an application fault, not the hardware
        ("aer", "warning", "0000:01:00.0", "Corrected"),
        ("aer", "warning", "0000:00:01.1", "Corrected"),
        ("aer", "fail", "0000:81:00.0", "Uncorrected (Fatal)"),
        ("amdgpu", "fail", "0000:c1:00.0", "GPU reset"),
        ("amdgpu", "warning", "0000:c1:00.0", "page fault"),
        ("amdgpu", "fail", "", "ring gfx_0.0.0 timeout"),
        ("xid", "fail", "0000:5d:00", "Xid 48"),
    ]
    assert kernel_log.parse("[ 0.0] Linux version 6.8\n[ 1.0] pcieport: AER: enabled\n") == []


def test_kernel_log_read_file_and_missing(tmp_path):
    p = tmp_path / "dmesg.txt"
    p.write_text(LOG)
    findings, source = kernel_log.scan(p)
    assert findings == kernel_log.parse(LOG) and findings and source == str(p)
    findings, why = kernel_log.scan(tmp_path / "nope.txt")
    assert findings is None and "cannot read" in why


def test_kernel_log_live_read_never_raises():
    text, source = kernel_log.read()
    assert (text is None) == (source.startswith("/dev/kmsg:"))  # text, or the reason it is unreadable


def test_checks_on_h100_tree():
    res = {r.check: r for r in run_checks(Expectations(gpus=8, model="H100"), root=H100)}
    assert res["gpu_count"].status == c.FAIL and "3 GPU(s) found, expected 8" in res["gpu_count"].summary
    assert res["gpu_model"].status == c.OK
    assert res["pcie_link"].status == c.FAIL
    assert any("0000:9a:00.0" in e and "width x8 < x16" in e for e in res["pcie_link"].evidence)
    assert res["pcie_aer"].status == c.WARNING
    assert res["kernel_log"].status == c.NA  # a fake root has no kernel log unless given one
    assert res["nic"].status == c.WARNING and "ens1f1np1" in res["nic"].evidence[0]  # a spare port is down
    assert res["rdma"].status == c.OK
    assert "RoCE v2 GID index 1,3" in " ".join(res["rdma"].evidence)
    assert res["gpu_partition"].status == c.NA


def test_nic_speed_and_named_nics():
    inv_root = H100
    slow = {r.check: r for r in run_checks(Expectations(nic_speed_gbps=200), root=inv_root)}
    assert slow["nic"].status == c.FAIL and "below the expected 200 Gb/s" in slow["nic"].evidence[0]
    assert slow["rdma"].status == c.FAIL  # the 100 Gb/s RoCE port
    named = {r.check: r for r in run_checks(Expectations(nics=("ens1f1np1",)), root=inv_root)}
    assert named["nic"].status == c.FAIL  # a NIC the user named must be up
    missing = {r.check: r for r in run_checks(Expectations(nics=("eth7",)), root=inv_root)}
    assert missing["nic"].status == c.FAIL and "not found: eth7" in missing["nic"].summary


def test_checks_on_mi300x_tree():
    res = {r.check: r for r in run_checks(Expectations(gpus=2, model="mi300x"), root=MI300X)}
    assert res["gpu_count"].status == c.OK and res["gpu_model"].status == c.OK
    assert res["gpu_partition"].status == c.WARNING  # one GPU in NPS1, the other NPS4
    assert res["gpu_ecc"].status == c.FAIL and "card2/umc: uncorrected 1" in res["gpu_ecc"].evidence[0]
    assert res["rdma"].status == c.WARNING  # port DOWN, not named
    exp = Expectations(compute_partition="CPX", memory_partition="NPS4")
    part = {r.check: r for r in run_checks(exp, root=MI300X)}["gpu_partition"]
    assert part.status == c.FAIL and part.evidence == ["gpu 1: memory partition NPS1, expected NPS4"]


def test_broken_tree_gives_na_or_warnings(tmp_path):
    results = run_checks(Expectations(), root=BROKEN)
    assert {r.status for r in results} <= {c.NA, c.WARNING, c.OK}
    assert exit_code(results) == 0
    assert run_checks(Expectations(), root=tmp_path)  # an empty root: all not-applicable, no crash
    assert overall(run_checks(Expectations(), root=tmp_path)) == c.NA


def test_pci_only_gpus_warn_when_libraries_failed():
    inv = {"gpus": [{"index": 0, "name": "NVIDIA H100", "source": "pci"}],
           "gpu_library_errors": {"nvml": "NVMLError_DriverNotLoaded"}}
    r = c.gpu_count(inv, Expectations(gpus=1))
    assert r.status == c.WARNING and "NVMLError_DriverNotLoaded" in r.evidence[0]


def test_ecc_from_library_rows():
    rows = [{"index": 0, "enabled": True, "uncorrected": 0, "corrected": 0, "remap_pending": True,
             "remap_failed": False}, {"index": 1, "enabled": False}]
    r = c.gpu_ecc({}, rows)
    assert r.status == c.FAIL and "row remap pending" in r.evidence[0]
    assert c.gpu_ecc({}, [{"index": 0, "enabled": False}]).status == c.NA


def test_record_is_json():
    results = run_checks(Expectations(), root=MI300X)
    rec = record(results)
    assert rec["status"] == c.FAIL and len(rec["checks"]) == len(results)
    json.dumps(rec)


def _cli(args, capsys):
    with pytest.raises(SystemExit) as e:
        main(args)
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


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


def test_before_run_records_and_never_raises(monkeypatch):
    import clusterbench.preflight as pf

    said = []
    meta = pf.before_run(say=said.append)
    assert meta["preflight"]["status"] in c.STATUSES and meta["preflight"]["host"]
    assert said[0].startswith("# preflight on ")
    json.dumps(meta)

    def broken(*_a, **_k):
        raise OSError("sysfs vanished")

    monkeypatch.setattr(pf, "run_checks", broken)
    meta = pf.before_run(say=said.append)
    assert meta["preflight"]["status"] == "error" and "sysfs vanished" in meta["preflight"]["error"]


def test_before_run_only_on_rank0(monkeypatch):
    import clusterbench.preflight as pf

    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert pf.before_run(say=lambda _t: None) is None


def test_run_command_records_preflight(monkeypatch, capsys):
    """``clusterbench run`` runs the preflight first and hands its outcome to the stored run."""
    import clusterbench.cli.commands.run as run_cmd

    seen = []
    monkeypatch.setattr(run_cmd, "run_benchmark_command", lambda job, name, out, meta, closing=None: seen.append(meta) or 0)
    code, _, err = _cli(["run", "--db", "unused.db"], capsys)
    assert code == 0 and seen[0]["preflight"]["status"] in c.STATUSES
    assert "# preflight on " in err
    code, _, err = _cli(["run", "--no-preflight", "--db", "unused.db"], capsys)
    assert code == 0 and seen[1] is None and "preflight" not in err


def test_a_nic_speed_that_cannot_be_read_is_not_an_expectation_met():
    inv = {"nics": [{"name": "eth0", "driver": "virtio_net", "operstate": "up", "speed_mbps": None, "mtu": 1500},
                    {"name": "eth1", "driver": "mlx5_core", "operstate": "up", "speed_mbps": 400000, "mtu": 9000}]}
    r = c.nics(inv, Expectations(nic_speed_gbps=100))
    assert r.status == c.WARNING and r.summary == "1 of unknown speed"
    assert "eth0" in r.evidence[0] and "cannot be checked" in r.evidence[0]
    assert c.nics(inv, Expectations()).status == c.OK   # nothing expected: nothing to check
