"""System tests (launch): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
import yaml
from cluster_fixtures import COLL, GLOO, IP, _cb, _hostlist_cb
from fake_ssh import PAYLOADS, _bash
from json_schema import check_lines
from judge_helpers import run_cli
from k8s_schemas import DSTACK_SCHEMA, check, pytorchjob_schema
from launch_rows import (
    BASE,
    EVIL,
    ROWS,
    TAIL,
    Row,
    _main_container,
    _master,
    _strings,
    launch_cli,
)
from slurm_fixtures import slurm_or_skip
from tty_runs import _run

from clusterbench.launch import slurm
from clusterbench.store import Store


def _hostfile(tmp_path, lines):
    f = tmp_path / "hostfile"
    f.write_text("\n".join(lines) + "\n")
    return str(f)


@pytest.fixture(scope="module")
def slurm_cluster_slurm(tmp_path_factory):
    yield from slurm_or_skip(tmp_path_factory.mktemp("slurm"))


def _cluster_slurm_cb(args, env, timeout=180):
    return subprocess.run([sys.executable, "-m", "clusterbench", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


REFUSED_EVERYWHERE = ("newline", "nul")   # a control character is refused by every option


_SBATCH_LINE = re.compile(r"#SBATCH --[a-z][a-z-]*(=[^\s'\"#\\$`]+)?")


def _check_slurm(out: str, env: dict[str, str], cwd: Path) -> None:
    head = out.split("\n\n", 1)[0].splitlines()
    assert head[0] == "#!/bin/bash"
    for line in head[1:]:  # sbatch reads these unquoted: one word per directive, nothing to misread
        assert _SBATCH_LINE.fullmatch(line), line
    directives = [line for line in out.splitlines() if line.startswith("#SBATCH")]
    assert directives == head[1:], "an #SBATCH line after the script started"
    _bash(out, env, cwd)


def _check_cmdline(out: str, env: dict[str, str], cwd: Path) -> None:
    _bash(out, env, cwd)


def _check_k8s(out: str, env: dict[str, str], cwd: Path) -> None:
    doc = yaml.safe_load(out)
    assert set(doc) == {"apiVersion", "kind", "metadata", "spec"}
    main = _main_container(doc)
    assert len(main) == 1 and all(isinstance(w, str) for w in main[0]["command"])
    # the master's command, as the container runtime runs it: an argument list
    subprocess.run(main[0]["command"], capture_output=True, text=True, timeout=20, env=env, cwd=cwd)


def _check_dstack(out: str, env: dict[str, str], cwd: Path, setup: int = 0) -> None:
    doc = yaml.safe_load(out)
    jsonschema.validate(doc, DSTACK_SCHEMA)
    assert doc["commands"][-1].startswith("torchrun --nnodes=2 ")
    # dstack runs the commands in a shell; --setup lines are the user's own shell text, skipped
    _bash("\n".join(doc["commands"][setup:]), env, cwd)


TARGET = {"slurm": _check_slurm, "mpi": _check_cmdline, "mpi-hosts": _check_cmdline, "torchrun": _check_cmdline,
          "torchrun-hosts": _check_cmdline, "k8s": _check_k8s, "k8s-mpijob": _check_k8s, "k8s-cron": _check_k8s,
          "dstack": _check_dstack}


def _argv(row: Row, payload: str, tmp_path: Path) -> list[str]:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node1 slots=8\nnode2 slots=8\n")
    bad_hostfile = tmp_path / "hosts-bad"
    bad_hostfile.write_text(f"node1 slots=8\n{payload} slots=8\n")
    subs = {"{p}": payload, "{hostfile}": str(hostfile), "{hostfile_with_payload}": str(bad_hostfile)}

    def fill(word: str) -> str:
        for k, v in subs.items():
            word = word.replace(k, v)
        return word

    return [fill(w) for w in (*BASE[row.launcher], *row.args, *row.tail)]


def _arrived(row: Row, payload: str, out: str, fakes: dict[str, str]) -> None:
    """The data value reached its consumer as one literal string."""
    if row.args[:1] == ("--mpirun",):
        assert shlex.split(out.splitlines()[0])[0] == payload
        return
    if row.launcher in ("k8s", "k8s-mpijob", "k8s-cron") and row.args[:1] == ("--env",):
        doc = yaml.safe_load(out)
        text = "\n".join(_strings(_main_container(doc)))  # the pod's environment, as the kubelet sets it
    elif row.launcher == "dstack" and row.args[:1] == ("--env",):
        text = "\n".join(_strings(yaml.safe_load(out)))  # the pod's environment is the manifest's
    else:  # what the fake tools were given; a --db path arrives made absolute
        text = Path(fakes["CB_ARGS"]).read_text()
    assert payload in text, f"{payload!r} did not arrive literally:\n{text}\n{out}"


@pytest.mark.root
@pytest.mark.slow
def test_node_that_never_joins_is_named(clean, tmp_path):
    clean.link(2, False)   # host 2 is up but cannot reach anyone
    r = _cb(["launch", "torchrun", "--hosts", ",".join(clean.hosts), "--agent", clean.agent, *GLOO,
             "--join-timeout", "8", "--wall-timeout", "90", "--", *COLL,
             "--db", str(tmp_path / "x.db")], timeout=120)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("clusterbench: error: rendezvous at") and "never joined" in last
    # ended by --join-timeout (these words), not by --wall-timeout ("did not finish within 90 s")
    assert f"{clean.hosts[2]} never joined" in last and clean.hosts[0] in last.split("joined:")[1]


@pytest.mark.root
@pytest.mark.slow
def test_rank_0_output_arrives_whichever_host_the_rendezvous_makes_rank_0(clean, tmp_path):
    # c10d numbers the nodes by address: with the hosts listed backwards, rank 0 is the last
    # one given, not the first (whose output alone was read before)
    hosts = list(reversed(clean.hosts[:2]))
    r = _cb(["launch", "torchrun", "--hosts", ",".join(hosts), "--agent", clean.agent, *GLOO,
             "--join-timeout", "40", "--wall-timeout", "120", "--", *COLL, "--json",
             "--db", str(tmp_path / "x.db")], timeout=150)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    lines = check_lines(r.stdout)
    assert any(m["kind"] == "measurement" and m["metric"] == "busbw" for m in lines)
    assert [m["status"] for m in lines if m["kind"] == "run"] == ["complete"]


def _pids(namespace: str) -> list[int]:
    """The processes that run in a host's network namespace."""
    return [int(p) for p in subprocess.run([IP, "netns", "pids", namespace], capture_output=True, text=True,
                                           timeout=10).stdout.split()]


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.parametrize("how", ["killed", "cut-off"])
def test_node_dying_mid_run_ends_the_run_incomplete(clean, tmp_path, how):
    """Every process of host 1 is killed mid-run ("killed": its sockets reset, rank 0's
    collective fails at once), or its link goes down first ("cut-off": nothing reaches rank 0,
    whose collective never returns until the launcher's SIGTERM, then SIGKILL 3 s later). Either
    way the rows rank 0 printed are stored, the run is incomplete and names the host that went,
    not "interrupted by SIGTERM"."""
    db = str(tmp_path / "dies.db")
    argv = [sys.executable, "-m", "clusterbench", "launch", "torchrun", "--hosts",
            ",".join(clean.hosts[:2]), "--agent", clean.agent, *GLOO, "--join-timeout", "60",
            "--wall-timeout", "150", "--", "coll", "all_reduce", "-b", "1K", "-e", "64M", "-n", "5",
            "--device", "cpu", "--timeout", "60", "--db", db]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        t0 = time.monotonic()
        printed = []
        while time.monotonic() - t0 < 90:
            line = p.stdout.readline()   # the table prints each size's row as it finishes
            if not line or (line.strip()[:1].isdigit() and not line.startswith("#")):
                printed.append(line)
                break
        assert printed and printed[0].strip()[:1].isdigit(), "no row arrived before the kill"
        if how == "cut-off":
            clean.link(1, False)
        for pid in _pids(clean.namespaces[1]):   # the node dies: every process on it, at once
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        out, err = p.communicate(timeout=140)   # a bound only: --wall-timeout would say so itself
        # The launcher has told host 0 to stop (SIGTERM), and host 0's torchrun gives rank 0 its
        # shutdown time to store the run: the command ends first, as with ssh to a real host.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _pids(clean.namespaces[0]):
            time.sleep(0.2)
        assert not _pids(clean.namespaces[0]), "rank 0 still runs 60 s after the launcher ended"
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode != 0
    assert err.strip().splitlines()[-1].startswith(f"clusterbench: error: host {clean.hosts[1]} "), err[-2000:]
    with Store.open(db) as store:
        (run,) = store.list_runs()
        assert run.status == "incomplete", (run.status, run.errors)
        # node1: the name the agent gives host 1 (CLUSTERBENCH_HOSTNAME), rank 1: c10d's order
        assert run.errors[0].startswith("rank 1 on node1 ended during the run"), run.errors
        assert not any("interrupted" in e for e in run.errors), run.errors
        rows = store.measurements(run.id)
        assert rows   # the rows that finished are kept, the one printed first among them
        assert int(printed[0].split()[0]) in {m.params.get("bytes") for m in rows}, (printed, rows[:3])


@pytest.mark.root
@pytest.mark.slow
def test_mpirun_runs_ranks_on_every_host(clean, tmp_path):
    db = str(tmp_path / "mpi.db")
    hf = _hostfile(tmp_path, [f"{h} slots=1" for h in clean.hosts])
    # All "hosts" share one kernel and /dev/shm: Open MPI 4.1's orteds then sometimes crash in
    # hwloc_shmem_topology_write (about 1 launch in 4 here); its hwloc rtc component is only for
    # binding, which this test does not use, so it is turned off for the emulated cluster.
    r = _cb(["launch", "mpi", "--hostfile", hf, "--agent", clean.agent, "--mca", "rtc=^hwloc",
             "--mca", "btl=tcp,self",
             "--mca", "btl_tcp_if_include=eth0", "--mca", "oob_tcp_if_include=eth0", *GLOO,
             "--wall-timeout", "120", "--", "coll", "all_reduce", "-b", "64K", "-e", "256K",
             "-n", "3", "-w", "1", "--device", "cpu", "--db", db],
            ns=clean.namespaces[0], env=clean.host_env(0), timeout=150)
    # (the start of stderr holds Open MPI's own reason when a daemon failed to start)
    assert r.returncode == 0, r.stdout[-1500:] + r.stderr[:1500] + r.stderr[-1500:]
    with Store.open(db) as store:
        (run,) = store.list_runs()
        assert run.status == "complete" and run.ranks == 3 and run.meta.get("launcher") == "mpi"
        assert "launch_id" in run.tags   # what launch mpi found it by
        assert sorted(run.hosts) == ["node0", "node1", "node2"]


@pytest.mark.root
@pytest.mark.slow
def test_unreachable_host_in_hostfile_is_one_line(clean, tmp_path):
    bad = f"{clean.subnet}.99"
    hf = _hostfile(tmp_path, [f"{clean.hosts[0]} slots=1", f"{bad} slots=1"])
    r = _cb(["launch", "mpi", "--hostfile", hf, "--agent", clean.agent, "--", "net"], timeout=60)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and bad in lines[0] and "unreachable" in lines[0]


def test_k8s_installs_nothing_unless_asked_then_from_the_wheel_or_index_given(tmp_path):
    from clusterbench import __version__

    r = launch_cli("launch", "k8s", "--nodes", "2", "--", "coll", "all_reduce", "--tag", EVIL)
    doc = yaml.safe_load(r.stdout)
    check(pytorchjob_schema(), doc)
    c = _master(doc)
    # the kubelet reduces $$ to $ (and would expand $(VAR) in a word that was not doubled)
    c["command"] = [w.replace("$$", "$") for w in c["command"]]
    assert c["image"] == "pytorch/pytorch:latest"
    assert c["command"][:4] == ["torchrun", "--nnodes=2", "--nproc_per_node=1", "-m"]   # no pip at pod start
    assert c["command"][-7:] == ["-m", "clusterbench", "coll", "--json", "all_reduce", "--tag", EVIL]
    assert "install nothing at start" in r.stderr and __version__ in r.stderr
    # the install scripts, run by a shell as the container would, with pip and torchrun recorders
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("pip", "torchrun"):
        (bindir / tool).write_text(f"#!/bin/sh\nprintf '{tool} %s\\n' \"$@\" >> {tmp_path}/log\n")
        (bindir / tool).chmod(0o755)
    wheel = f"/mnt/wheels/{EVIL}/clusterbench-{__version__}-py3-none-any.whl"
    for source, pip in ((wheel, [wheel]),
                        ("https://pypi.mirror.internal/simple",
                         ["--index-url", "https://pypi.mirror.internal/simple", f"clusterbench=={__version__}"])):
        (tmp_path / "log").unlink(missing_ok=True)
        r = launch_cli("launch", "k8s", "--vendor", "amd", "--install-from", source, "--", "net", "--tag", EVIL)
        assert r.returncode == 0 and r.stderr == "", r.stderr
        c = _master(yaml.safe_load(r.stdout))
        assert c["image"] == "rocm/pytorch:latest"
        subprocess.run([w.replace("$$", "$") for w in c["command"]], env={"PATH": f"{bindir}:/usr/bin:/bin"},
                       timeout=10, check=True)
        log = (tmp_path / "log").read_text().splitlines()
        assert log[:3 + len(pip)] == ["pip install", "pip --quiet", "pip --no-cache-dir", *(f"pip {w}" for w in pip)]
        assert log[-1] == f"torchrun {EVIL}"
    own = yaml.safe_load(launch_cli("launch", "k8s", "--install",
                             "clusterbench @ https://example.org/cb-0.1-py3-none-any.whl", "--", "net").stdout)
    assert _master(own)["command"][4] == "clusterbench @ https://example.org/cb-0.1-py3-none-any.whl"


def test_torchrun_env_without_hosts_reaches_the_ranks(tmp_path, monkeypatch):
    """--env without --hosts: printed as the line's environment, and given to torchrun when run."""
    r = launch_cli("launch", "torchrun", "--rdzv-endpoint", "node1:29400", "--env", "NCCL_IB_HCA=mlx5_0",
            "--env", f"EVIL={EVIL}", "--print", "--", "net")
    assert r.returncode == 0
    first = shlex.split(r.stdout.splitlines()[0])
    assert first[:4] == ["env", "NCCL_IB_HCA=mlx5_0", f"EVIL={EVIL}", "torchrun"]
    assert shlex.split(r.stdout.splitlines()[1].split(": ", 1)[1])[-1] == r.stdout.splitlines()[0]
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "torchrun").write_text(f"#!/bin/sh\nprintf '%s\\n' \"$NCCL_IB_HCA\" \"$EVIL\" > {tmp_path}/env\n")
    (bindir / "torchrun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    r = launch_cli("launch", "torchrun", "--rdzv-endpoint", "node1:29400", "--env", "NCCL_IB_HCA=mlx5_0",
            "--env", f"EVIL={EVIL}", "--", "net")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "env").read_text().splitlines() == ["mlx5_0", EVIL]


def test_submit_runs_end_to_end_and_imports_the_run(slurm_cluster_slurm, tmp_path):
    db = tmp_path / "slurm.db"
    out = tmp_path / "job-%j.out"
    r = _cluster_slurm_cb(["launch", "slurm", "--submit", "--nodes", "2", "--time", "5", "--output", str(out),
             "--env", "MASTER_ADDR=127.0.0.1", "--env", "OMP_NUM_THREADS=1",
             "--env", "NCCL_IB_QPS_PER_CONNECTION=4", "--wait-timeout", "150", "--db", str(db), "--json",
             "--", "coll", "all_reduce", "-b", "64K", "-e", "256K", "-n", "3", "-w", "1",
             "--device", "cpu", "--tag", "who=$(touch /tmp/cb6-pwned)"], slurm_cluster_slurm)
    logs = "\n".join(p.read_text() for p in tmp_path.glob("job-*.out"))
    assert r.returncode == 0, r.stderr + logs
    assert "COMPLETED" in r.stderr and "2 rank(s)" in r.stderr
    lines = check_lines(r.stdout)  # --json: the stored run's lines, valid against the schema
    run_line = next(x for x in lines if x["kind"] == "run")   # then its noise warnings, if any
    assert run_line["status"] == "complete" and run_line["ranks"] == 2
    assert {x["kind"] for x in lines[lines.index(run_line) + 1:]} <= {"warning"}
    with Store.open(db) as store:
        runs = store.list_runs()
        assert len(runs) == 1
        run = runs[0]
        assert run.status == "complete" and run.ranks == 2
        assert run.meta.get("launcher") == "slurm"
        assert run.tags["who"] == "$(touch /tmp/cb6-pwned)"   # a tag is data, never code
        assert store.measurements(run.id)
    assert not os.path.exists("/tmp/cb6-pwned")


def test_sbatch_missing_is_one_line(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}  # nothing on PATH
    r = _cluster_slurm_cb(["launch", "slurm", "--submit", "--nodes", "2", "--db", str(tmp_path / "x.db"), "--", "net"],
            env, timeout=60)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("clusterbench: error: sbatch not found")


def test_launchers_take_the_grammar(tmp_path):
    r = _hostlist_cb("launch", "torchrun", "--hosts", "rack[1-2]-n[1-2]", "--print", "--", "net")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 4 and "rack2-n2" in lines[-1] and "--rdzv_endpoint=rack1-n1:29400" in lines[0]
    r = _hostlist_cb("launch", "mpi", "--hosts", "gpu[01-02]", "--procs-per-node", "4", "--print", "--", "net")
    assert r.returncode == 0, r.stderr
    assert "-H gpu01:4,gpu02:4" in r.stdout and "-n 8" in r.stdout
    r = _hostlist_cb("launch", "mpi", "--print", "--", "net")
    assert r.returncode == 2 and "--hostfile PATH or --hosts" in r.stderr
    r = _hostlist_cb("launch", "slurm", "--nodelist", "rack[1-2]-gpu[01-02] login1", "--print", "--", "net")
    assert r.returncode == 0, r.stderr
    assert "#SBATCH --nodelist=rack[1-2]-gpu[01-02],login1" in r.stdout
    assert "#SBATCH --nodes=5" in r.stdout
    r = _hostlist_cb("launch", "slurm", "--nodelist", "gpu[01-04]", "--nodes", "2", "--print", "--", "net")
    assert r.returncode == 2 and "names 4 nodes" in r.stderr
    r = _hostlist_cb("launch", "slurm", "--nodelist", "gpu[1-2];reboot", "--print", "--", "net")
    assert r.returncode == 2 and r.stderr.startswith("clusterbench: error: invalid --nodelist")


@pytest.mark.parametrize("name", PAYLOADS)
@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r.launcher}:{' '.join(r.args) or ' '.join(r.tail[3:]) or r.tail[2]}")
def test_injection(row: Row, name: str, tmp_path: Path, fakes: dict[str, str], monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "P"
    payload = PAYLOADS[name].format(m=marker)
    code, out, err = run_cli(*_argv(row, payload, tmp_path))
    if code != 0:
        assert code == 2, err
        assert err.startswith("clusterbench: error: ") and err.count("\n") == 1, err
        assert out == ""
        assert not (row.data and name not in REFUSED_EVERYWHERE), f"a data value was refused: {err}"
        return
    assert name not in REFUSED_EVERYWHERE, f"a control character was accepted:\n{out}"
    setup = 1 if "--setup" in row.args else 0
    if row.launcher == "dstack":
        _check_dstack(out, fakes, tmp_path, setup)
    else:
        TARGET[row.launcher](out, fakes, tmp_path)
    assert not marker.exists(), f"the payload ran:\n{out}"
    if row.reaches_tool:
        assert Path(fakes["CB_RAN"]).exists(), f"the generated text never reached the benchmark:\n{out}"
    if row.data:
        _arrived(row, payload, out, fakes)


@pytest.mark.parametrize("value, seconds", [
    ("1440", 86400), ("10080", 604800), ("1:5", 65), ("30:0", 1800), ("1000:00:00", 3600000),
])
def test_every_slurm_time_format_is_taken(value: str, seconds: int) -> None:
    """Minutes wider than three digits (a day is 1440) and one-digit fields were refused."""
    code, out, err = run_cli("launch", "slurm", "--time", value, *TAIL)
    assert code == 0, err
    assert f"#SBATCH --time={value}\n" in out
    assert subprocess.run(["bash", "-n"], input=out, text=True, timeout=10).returncode == 0
    assert slurm.check_time(value) == seconds


@pytest.mark.parametrize("quiet", [False, True])
def test_launch_slurm_print_is_unchanged_by_quiet(quiet):
    args = ["launch", "slurm", "--nodes", "2", "--print", *(["--quiet"] if quiet else []), "--", "net"]
    rc, out, err = _run(args, tty_stderr=False, timeout=60)
    assert rc == 0 and out.startswith(b"#!/bin/bash") and err == b""


def test_a_bad_tag_in_a_launched_command_is_refused_before_launch(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("node1 slots=1\nnode2 slots=1\n")
    p = subprocess.run([sys.executable, "-m", "clusterbench", "launch", "mpi", "--hostfile", str(hosts), "--print",
                        "--", "coll", "all_reduce", "--tag", "k="], capture_output=True, text=True, timeout=60,
                       env={**os.environ}, cwd=tmp_path)
    assert p.returncode == 2 and p.stdout == "", p
    assert p.stderr.count("\n") == 1 and "empty value" in p.stderr


def test_a_slurm_job_whose_rendezvous_host_does_not_resolve_fails_at_once_in_one_line(slurm_cluster_slurm, tmp_path):
    """Before: the job hung 240 s with no output until --wait-timeout cancelled it, and the run
    said only "interrupted by SIGTERM". The script checks MASTER_ADDR before srun starts a rank."""
    db = tmp_path / "x.db"
    r = _cluster_slurm_cb(["launch", "slurm", "--submit", "--nodes", "2", "--time", "5", "--output",
                           str(tmp_path / "job-%j.out"), "--env", "MASTER_ADDR=n9-no-such-node.invalid",
                           "--wait-timeout", "300", "--db", str(db), "--", "coll", "all_reduce", "-b", "1K", "-e", "1K",
                           "--device", "cpu"], slurm_cluster_slurm, timeout=30)   # the bound: 30 s
    (log,) = tmp_path.glob("job-*.out")
    assert log.read_text().splitlines() == [
        "clusterbench: error: MASTER_ADDR n9-no-such-node.invalid does not resolve on n1 (getent hosts found no "
        "address): give an address the nodes reach, --env MASTER_ADDR=IP"]   # and no rank started
    assert r.returncode == 1, r.stderr
    errors = [e for e in r.stderr.splitlines() if e.startswith("clusterbench: error:")]
    assert len(errors) == 1, r.stderr
    assert " FAILED (exit 2:0" in errors[0] and "saying: MASTER_ADDR n9-no-such-node.invalid does not resolve on n1" \
        in errors[0], errors


def test_a_slurm_job_whose_first_node_is_in_no_lookup_meets_at_its_address(slurm_cluster_slurm, tmp_path):
    """The fixture's nodes n1 and n2 are in no DNS: the script gives the ranks the first node's
    own address (hostname -I on it), and the job completes without MASTER_ADDR."""
    db = tmp_path / "x.db"
    r = _cluster_slurm_cb(["launch", "slurm", "--submit", "--nodes", "2", "--time", "5", "--output",
                           str(tmp_path / "job-%j.out"), "--env", "OMP_NUM_THREADS=1", "--wait-timeout", "150",
                           "--db", str(db), "--", "coll", "all_reduce", "-b", "64K", "-e", "64K", "-n", "2", "-w", "1",
                           "--device", "cpu"], slurm_cluster_slurm)
    logs = "\n".join(p.read_text() for p in tmp_path.glob("job-*.out"))
    assert r.returncode == 0, r.stderr + logs
    assert "COMPLETED" in r.stderr and "2 rank(s)" in r.stderr
