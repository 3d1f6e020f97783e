"""Launcher builders: argument lists, scripts and manifests; hostfiles; --auto-net-env on fake
sysfs trees; host names and tags with shell metacharacters stay data."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml
from k8s_schemas import (
    DSTACK_SCHEMA,
    check,
    mpijob_schema,
    pytorchjob_schema,
    strict,
)

from clusterbench.errors import UsageError
from clusterbench.launch import dstack, k8s, mpi, netenv, slurm
from clusterbench.launch import torchrun as tr
from clusterbench.launch.common import Spec, bench_command, parse_env, parse_hosts, remote_line

SCHEMAS = Path(__file__).parent / "data" / "schemas"
EVIL = "x=$(touch /tmp/cb6-evil); `touch /tmp/cb6-evil` | rm -rf / ; 'q\""


def _cb(*args):
    """The CLI in this process (no re-import per call): exit code, stdout, stderr."""
    import contextlib
    import io

    from clusterbench.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


# -- hostfiles and mpirun --------------------------------------------------------------------

def test_hostfile_forms():
    hosts = mpi.parse_hostfile("# rack 1\nnode1 slots=8\nnode2 slots=8 max_slots=8\n\nnode3:4\n10.0.0.9\n")
    assert [(h.host, h.slots) for h in hosts] == [("node1", 8), ("node2", 8), ("node3", 4), ("10.0.0.9", 1)]


@pytest.mark.parametrize("text, word", [
    ("node1 slots=x\n", "line 1"),
    ("node1 slots=2\nnode2 cpus=4\n", "line 2: unexpected 'cpus=4'"),
    ("node1\nnode1\n", "listed twice"),
    ("no$de slots=1\n", "invalid host"),
    ("# only comments\n", "no hosts"),
    ("node1 slots=0\n", "at least 1"),
])
def test_malformed_hostfile(text, word):
    with pytest.raises(UsageError, match=word.replace("$", r"\$")):
        mpi.parse_hostfile(text)


def test_malformed_hostfile_cli_is_one_line(tmp_path):
    f = tmp_path / "hosts"
    f.write_text("node1 slots=2\nnode2 banana\n")
    r = _cb("launch", "mpi", "--hostfile", str(f), "--", "net")
    assert r.returncode == 2
    assert r.stderr.strip() == "clusterbench: error: hosts line 2: unexpected 'banana' (expected slots=N or max_slots=N)"


def test_hostfile_read_from_disk_as_mpirun_reads_it(tmp_path):
    """A lone CR is no line break to Open MPI: read with universal newlines, node2 was checked and
    launched as a host of its own while mpirun saw one line 'node1 slots=2\rnode2 slots=2'."""
    crlf, lone = tmp_path / "crlf", tmp_path / "lone"
    crlf.write_bytes(b"node1 slots=2\r\nnode2 slots=2\r\n")
    lone.write_bytes(b"node1 slots=2\rnode2 slots=2\n")
    assert [(h.host, h.slots) for h in mpi.read_hostfile(str(crlf))] == [("node1", 2), ("node2", 2)]
    with pytest.raises(UsageError, match="line 1: control character"):
        mpi.read_hostfile(str(lone))


def test_mpirun_argv_env_mca_slots():
    spec = Spec(nodes=2, procs_per_node=8, env={"NCCL_IB_GID_INDEX": "3", "UCX_NET_DEVICES": "mlx5_0:1"},
                command=["coll", "all_reduce"])
    hosts = mpi.parse_hostfile("a slots=8\nb slots=8\n")
    argv = mpi.mpirun_argv(spec, hosts, hostfile="/h", mca=[("btl_tcp_if_include", "bond0")],
                           allow_root=True)
    assert argv[:6] == ["mpirun", "--allow-run-as-root", "--hostfile", "/h", "-n", "16"]
    assert argv[argv.index("-N") + 1] == "8"
    assert ["--mca", "btl_tcp_if_include", "bond0"] == argv[argv.index("--mca"):argv.index("--mca") + 3]
    assert "MASTER_ADDR=a" in argv and "NCCL_IB_GID_INDEX=3" in argv and "UCX_NET_DEVICES=mlx5_0:1" in argv
    assert argv[-3:] == ["clusterbench", "coll", "all_reduce"]
    with pytest.raises(UsageError, match="slots"):
        mpi.mpirun_argv(Spec(nodes=2, procs_per_node=9, command=["net"]), hosts)


# -- torchrun --------------------------------------------------------------------------------

def test_torchrun_c10d_and_static():
    spec = Spec(nodes=2, procs_per_node=8, command=["coll", "all_reduce"])
    c10d = tr.torchrun_argv(spec, "10.0.0.1:29400", local_addr="10.0.0.2", is_host=False, join_timeout=30)
    assert "--rdzv_backend=c10d" in c10d and "--rdzv_endpoint=10.0.0.1:29400" in c10d
    assert "--rdzv_conf=is_host=0,join_timeout=30" in c10d and "--local_addr=10.0.0.2" in c10d
    assert c10d[-4:] == ["-m", "clusterbench", "coll", "all_reduce"]
    static = tr.torchrun_argv(spec, "head:29500", node_rank=1)
    assert "--node_rank=1" in static and "--master_addr=head" in static and "--master_port=29500" in static
    with pytest.raises(UsageError):
        tr.torchrun_argv(spec, "head:29500", node_rank=2)
    with pytest.raises(UsageError):
        tr.torchrun_argv(spec, "head;reboot:29500")


def test_ipv6_rendezvous_endpoint_in_brackets():
    """A sweep over IPv6 hosts wrote fe80::1:29400, an endpoint torchrun cannot split."""
    spec = Spec(nodes=2, procs_per_node=1, command=["net"])
    assert tr.endpoint_of("fe80::1", 29400) == "[fe80::1]:29400" and tr.endpoint_of("h1", 5) == "h1:5"
    assert "--rdzv_endpoint=[fe80::1]:29400" in tr.torchrun_argv(spec, tr.endpoint_of("fe80::1", 29400))
    with pytest.raises(UsageError, match=r"in brackets, \[fe80::1\]:29400"):
        tr.torchrun_argv(spec, "fe80::1:29400")


def test_diagnose_names_missing_and_dead_hosts():
    r = tr.HostsResult(["a", "b", "c"], {"a": 1, "b": 1, "c": None}, "",
                       {"a": ["torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError"],
                        "b": ["RendezvousTimeoutError"], "c": []}, killed=["c"])
    assert tr.diagnose(r, "a:1", 5) == "rendezvous at a:1 timed out after 5 s: c never joined (joined: a, b)"
    r = tr.HostsResult(["a", "b"], {"a": 1, "b": -9}, "", {"a": ["x"], "b": []})
    assert tr.diagnose(r, "a:1", 5) == "host b died (SIGKILL) before the run finished"
    r = tr.HostsResult(["a", "b"], {"a": 0, "b": 255}, "", {"a": [], "b": ["ssh: connect to host b: No route"]})
    assert tr.diagnose(r, "a:1", 5).startswith("host b is unreachable: ssh: connect")
    assert tr.diagnose(tr.HostsResult(["a"], {"a": 0}, "", {"a": []}), "a:1", 5) is None


# -- host names and tags with shell metacharacters -------------------------------------------

@pytest.mark.parametrize("bad", ["a;touch /tmp/x", "$(id)", "a b;c", "`id`", "a|b", "-oProxyCommand=x"])
def test_hosts_with_metacharacters_are_rejected(bad):
    with pytest.raises(UsageError):
        parse_hosts(bad)


def test_hostlist_expansion():
    assert parse_hosts("gpu[01-03],login1") == ["gpu01", "gpu02", "gpu03", "login1"]


def test_remote_words_round_trip_through_a_shell(tmp_path):
    marker = tmp_path / "pwned"
    words = ["clusterbench", "net", "--tag", f"x=$(touch {marker}); `touch {marker}`", EVIL]
    line = " ".join(remote_line(words))
    # what an ssh-like agent does on the far side: one shell line
    out = subprocess.run(["/bin/sh", "-c", f"printf '%s\\n' {line}"], capture_output=True, text=True,
                         timeout=10)
    assert out.stdout.splitlines() == words
    assert not marker.exists()


def test_sbatch_script_quotes_env_and_tags(tmp_path):
    marker = tmp_path / "pwned"
    spec = Spec(nodes=2, procs_per_node=8, gpus_per_node=8,
                env=parse_env(["NCCL_IB_QPS_PER_CONNECTION=4", "NCCL_BUFFSIZE=8388608",
                               "UCX_NET_DEVICES=mlx5_0:1", f"EVIL=$(touch {marker})"]),
                command=["coll", "all_reduce", "--tag", f"t=`touch {marker}`"])
    script = slurm.sbatch_script(spec, slurm.SlurmOptions(partition="gpu", time="01:00:00"))
    for line in ("#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=8", "#SBATCH --gpus-per-node=8",
                 "#SBATCH --partition=gpu", "#SBATCH --time=01:00:00",
                 "export NCCL_IB_QPS_PER_CONNECTION=4", "export UCX_NET_DEVICES=mlx5_0:1"):
        assert line in script.splitlines()
    srun = [line for line in script.splitlines() if line.startswith("srun ")][0]
    assert shlex.split(srun)[-5:] == ["clusterbench", "coll", "all_reduce", "--tag", f"t=`touch {marker}`"]
    # run the script's shell parts with srun and scontrol replaced by printers
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("srun", "scontrol"):
        (bindir / tool).write_text("#!/bin/sh\nprintf '%s\\n' \"$@\"\n")
        (bindir / tool).chmod(0o755)
    r = subprocess.run(["/bin/bash", "-c", script], capture_output=True, text=True, timeout=10,
                       env={"PATH": f"{bindir}:/usr/bin:/bin", "SLURM_JOB_NODELIST": "n[1-2]"})
    assert r.returncode == 0, r.stderr
    assert f"t=`touch {marker}`" in r.stdout.splitlines()
    assert not marker.exists()


@pytest.mark.parametrize("opts", [slurm.SlurmOptions(partition="a;b"), slurm.SlurmOptions(time="soon"),
                                  slurm.SlurmOptions(extra=("--x\n#SBATCH --y",))])
def test_sbatch_options_validated(opts):
    with pytest.raises(UsageError):
        slurm.sbatch_script(Spec(command=["net"]), opts)


def test_env_and_command_validation():
    with pytest.raises(UsageError):
        parse_env(["1BAD=x"])
    with pytest.raises(UsageError):
        parse_env(["NOVALUE"])
    with pytest.raises(UsageError):
        bench_command([])
    assert bench_command(["clusterbench", "net"]) == ["net"]


def test_an_unknown_launcher_option_is_not_taken_for_the_command():
    r = _cb("launch", "torchrun", "--nnodes", "2", "--rdzv-endpoint", "node1:29500", "--print", "--", "net")
    assert r.returncode == 2
    assert r.stderr == ("clusterbench: error: no such option: --nnodes (options go before --, "
                        "the clusterbench command after it)\n")
    assert _cb("launch", "slurm", "--nodes", "2", "coll", "all_reduce", "-b", "8").returncode == 0


def test_print_makes_no_process_and_bad_host_is_one_line():
    r = _cb("launch", "torchrun", "--hosts", "a,$(reboot)", "--print", "--", "net")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "invalid host" in r.stderr


@pytest.mark.parametrize("option, value", [("--time", "1:00\nx"), ("--env", "A=1\nx"), ("--sbatch-opt", "--a=1\nx")])
def test_a_refused_value_is_named_by_the_option_as_typed(option, value):
    r = _cb("launch", "slurm", "--print", option, value, "--", "coll", "all_reduce")
    assert r.returncode == 2 and r.stderr.startswith(f"clusterbench: error: invalid {option} "), r.stderr


def test_ipv6_rendezvous_hosts_are_addresses_not_options():
    r = _cb("launch", "torchrun", "--print", "--nodes", "2", "--rdzv-endpoint", "[::1]:29400", "--", "coll",
            "all_reduce")
    assert r.returncode == 0 and "--rdzv_endpoint=[::1]:29400" in r.stdout, r.stderr
    r = _cb("launch", "torchrun", "--print", "--nodes", "2", "--rdzv-endpoint", "[::1;reboot]:29400", "--",
            "coll", "all_reduce")
    assert r.returncode == 2 and "invalid rendezvous host" in r.stderr


# -- Kubernetes and dstack -------------------------------------------------------------------

def test_pytorchjob_matches_the_crd_schema():
    spec = Spec(nodes=8, procs_per_node=2, gpus_per_node=2, env={"NCCL_IB_GID_INDEX": "3"},
                command=["coll", "all_reduce", "-b", "1M", "-e", "1G"])
    doc = k8s.pytorchjob(spec, k8s.K8sOptions(networks=("sriov-a", "sriov-b"), cpu="1", memory="10Gi",
                                              extra_resources={"rdma/roce_gdr": "1"}))
    check(pytorchjob_schema(), doc)
    master, worker = doc["spec"]["pytorchReplicaSpecs"]["Master"], doc["spec"]["pytorchReplicaSpecs"]["Worker"]
    assert master["replicas"] == 1 and worker["replicas"] == 7
    pod = worker["template"]
    c = pod["spec"]["containers"][0]
    assert c["name"] == "pytorch" and c["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}} in pod["spec"]["volumes"]
    assert pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == "sriov-a,sriov-b"
    assert c["command"][-6:] == ["coll", "all_reduce", "-b", "1M", "-e", "1G"]
    # a typo'd field is caught: the strict walk knows the schema's fields
    pod["spec"]["containers"][0]["volumeMount"] = []
    assert strict(pytorchjob_schema(), doc) == [
        ".spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].volumeMount"]


def test_mpijob_matches_the_crd_schema_and_single_node_has_no_worker():
    spec = Spec(nodes=2, procs_per_node=8, gpus_per_node=8, command=["coll", "all_reduce"])
    doc = k8s.mpijob(spec, k8s.K8sOptions(gpu_resource="amd.com/gpu", image="registry.example/cb:0.1",
                                          install=None))
    check(mpijob_schema(), doc)
    assert doc["spec"]["slotsPerWorker"] == 8 and doc["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 2
    one = k8s.pytorchjob(Spec(nodes=1, command=["net"]), k8s.K8sOptions())
    check(pytorchjob_schema(), one)
    assert "Worker" not in one["spec"]["pytorchReplicaSpecs"]
    bad = dict(doc, spec=dict(doc["spec"], slotsPerWorker=0))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, mpijob_schema())


def test_k8s_cli_yaml_has_no_anchors_and_validates():
    r = _cb("launch", "k8s", "--nodes", "3", "--gpus-per-node", "8", "--gpu-resource", "amd.com/gpu",
            "--network", "roce-net", "--", "coll", "all_reduce")
    assert r.returncode == 0, r.stderr
    assert "&id" not in r.stdout
    check(pytorchjob_schema(), yaml.safe_load(r.stdout))
    assert _cb("launch", "k8s", "--name", "Bad_Name", "--", "net").returncode == 2


def test_dstack_task_like_the_seed():
    spec = Spec(nodes=2, gpus_per_node=8, procs_per_node=8, env={"NCCL_IB_GID_INDEX": "3"},
                command=["coll", "all_reduce", "--tag", EVIL])
    doc = dstack.task(spec, gpu="MI300X", setup=("pip install clusterbench",))
    jsonschema.validate(doc, DSTACK_SCHEMA)
    assert doc["resources"]["gpu"] == "MI300X:8" and doc["nodes"] == 2
    run = doc["commands"][-1]
    assert "--node_rank=$DSTACK_NODE_RANK" in run and "--master_addr=$DSTACK_MASTER_NODE_IP" in run
    assert shlex.split(run)[-1] == EVIL   # the shell dstack runs sees the tag as one word
    with pytest.raises(UsageError):
        dstack.task(spec, startup_order="whenever")


# -- --auto-net-env on fake sysfs trees ------------------------------------------------------

def _fake_sys(root: Path, ib: dict[str, dict], nets: dict[str, str]) -> Path:
    for name, state in nets.items():
        (root / "class/net" / name).mkdir(parents=True)
        (root / "class/net" / name / "operstate").write_text(state + "\n")
    for dev, info in ib.items():
        port = root / "class/infiniband" / dev / "ports" / "1"
        (port / "gids").mkdir(parents=True)
        (port / "gid_attrs/types").mkdir(parents=True)
        (port / "state").write_text(info.get("state", "4: ACTIVE") + "\n")
        (port / "link_layer").write_text(info.get("link", "Ethernet") + "\n")
        for i, (gid, typ) in enumerate(info.get("gids", [])):
            (port / "gids" / str(i)).write_text(gid + "\n")
            (port / "gid_attrs/types" / str(i)).write_text(typ + "\n")
    (root / "class/infiniband").mkdir(parents=True, exist_ok=True)
    return root


def test_auto_net_env_roce(tmp_path):
    v4 = "0000:0000:0000:0000:0000:ffff:0a00:0001"
    gids = [("fe80:0000:0000:0000:0000:0000:0000:0001", "IB/RoCE v1"),
            ("fe80:0000:0000:0000:0000:0000:0000:0001", "RoCE v2"), (v4, "IB/RoCE v1"), (v4, "RoCE v2")]
    root = _fake_sys(tmp_path, {"mlx5_0": {"gids": gids}, "mlx5_1": {"gids": gids},
                                "mlx5_2": {"state": "1: DOWN", "gids": gids}},
                     {"lo": "unknown", "eth0": "up", "net1": "up", "docker0": "up", "eth9": "down"})
    choice = netenv.choose(root)
    assert choice.env == {"NCCL_SOCKET_IFNAME": "eth0,net1", "GLOO_SOCKET_IFNAME": "eth0",
                          "NCCL_IB_HCA": "mlx5_0,mlx5_1", "NCCL_IB_DISABLE": "0", "NCCL_IB_GID_INDEX": "3"}


def test_auto_net_env_infiniband_and_none(tmp_path):
    ib = _fake_sys(tmp_path / "ib", {"mlx5_0": {"link": "InfiniBand"}}, {"ib0": "up"})
    assert netenv.choose(ib).env == {"NCCL_SOCKET_IFNAME": "ib0", "GLOO_SOCKET_IFNAME": "ib0",
                                     "NCCL_IB_HCA": "mlx5_0", "NCCL_IB_DISABLE": "0"}
    none = _fake_sys(tmp_path / "none", {}, {"eth0": "up"})
    choice = netenv.choose(none)
    assert choice.env["NCCL_IB_DISABLE"] == "1" and "NCCL_IB_HCA" not in choice.env
    assert any("no active RDMA device" in r for r in choice.reasons)


def test_auto_net_env_cli_prints_its_choice(tmp_path):
    root = _fake_sys(tmp_path, {"mlx5_0": {"link": "InfiniBand"}}, {"ib0": "up"})
    r = _cb("launch", "slurm", "--auto-net-env", "--sys-root", str(root), "--env", "NCCL_IB_HCA=mlx5_9",
            "--", "net")
    assert r.returncode == 0
    assert "export NCCL_IB_HCA=mlx5_9" in r.stdout   # an explicit --env wins
    assert "export NCCL_SOCKET_IFNAME=ib0" in r.stdout and "auto-net-env" in r.stderr


def test_no_marker_left():
    assert not os.path.exists("/tmp/cb6-evil")


# -- results home from Kubernetes and dstack (issue 17) ---------------------------------------

def _master(doc: dict) -> dict:
    return doc["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]


def test_k8s_db_secret_sets_the_url_from_the_secret_never_the_url():
    r = _cb("launch", "k8s", "--nodes", "2", "--db-secret", "team-db:pg-url", "--env", "NCCL_DEBUG=INFO",
            "--", "coll", "all_reduce")
    assert r.returncode == 0, r.stderr
    doc = yaml.safe_load(r.stdout)
    check(pytorchjob_schema(), doc)
    for role in ("Master", "Worker"):
        env = doc["spec"]["pytorchReplicaSpecs"][role]["template"]["spec"]["containers"][0]["env"]
        assert env == [{"name": "NCCL_DEBUG", "value": "INFO"},
                       {"name": "CLUSTERBENCH_DB", "valueFrom": {"secretKeyRef": {"name": "team-db", "key": "pg-url"}}}]
    assert "--db" not in _master(doc)["command"]
    default_key = k8s.SecretRef.parse("team-db")
    assert (default_key.name, default_key.key) == ("team-db", "url")
    # a wrong field inside the reference is caught by the transcribed schema
    _master(doc)["env"][1]["valueFrom"]["secretKeyRef"]["keyy"] = "x"
    assert strict(pytorchjob_schema(), doc) == [
        ".spec.pytorchReplicaSpecs.Master.template.spec.containers[0].env[1].valueFrom.secretKeyRef.keyy"]


def test_k8s_mpijob_forwards_the_secret_to_the_ranks_and_needs_an_image():
    r = _cb("launch", "k8s", "--kind", "mpijob", "--image", "registry.example/cb:0.1", "--db-secret", "team-db",
            "--", "coll", "all_reduce")
    assert r.returncode == 0, r.stderr
    doc = yaml.safe_load(r.stdout)
    check(mpijob_schema(), doc)
    launcher = doc["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    cmd = launcher["command"]
    assert cmd[cmd.index("clusterbench") - 2:cmd.index("clusterbench")] == ["-x", "CLUSTERBENCH_DB"]
    assert {"name": "CLUSTERBENCH_DB", "valueFrom": {"secretKeyRef": {"name": "team-db", "key": "url"}}} \
        in launcher["env"]
    assert cmd[-3:] == ["coll", "--json", "all_reduce"]
    for args, word in ((["--kind", "mpijob"], "needs --image"),
                       (["--kind", "mpijob", "--image", "x/y:1", "--install", "clusterbench"], "does not apply"),
                       (["--db-secret", "team-db", "--env", "CLUSTERBENCH_DB=sqlite.db"], "give one"),
                       (["--db-secret", "Team_DB"], "invalid --db-secret"),
                       (["--install", "x", "--no-install"], "give one"),
                       (["--install", "--index-url=http://evil/"], "invalid --install")):
        r = _cb("launch", "k8s", *args, "--", "net")
        assert r.returncode == 2 and word in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)


def test_k8s_installs_clusterbench_on_a_public_pytorch_image(tmp_path):
    from clusterbench import __version__

    r = _cb("launch", "k8s", "--nodes", "2", "--", "coll", "all_reduce", "--tag", EVIL)
    doc = yaml.safe_load(r.stdout)
    check(pytorchjob_schema(), doc)
    c = _master(doc)
    # the kubelet reduces $$ to $ (and would expand $(VAR) in a word that was not doubled)
    c["command"] = [w.replace("$$", "$") for w in c["command"]]
    assert c["image"] == "pytorch/pytorch:latest"
    assert c["command"][:6] == ["sh", "-c", k8s.INSTALL_SCRIPT, "clusterbench-install",
                                f"clusterbench=={__version__}", "torchrun"]
    assert c["command"][-7:] == ["-m", "clusterbench", "coll", "--json", "all_reduce", "--tag", EVIL]
    # the install script, run by a shell as the container would, with pip and torchrun recorders
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("pip", "torchrun"):
        (bindir / tool).write_text(f"#!/bin/sh\nprintf '{tool} %s\\n' \"$@\" >> {tmp_path}/log\n")
        (bindir / tool).chmod(0o755)
    subprocess.run(c["command"], env={"PATH": f"{bindir}:/usr/bin:/bin"}, timeout=10, check=True)
    log = (tmp_path / "log").read_text().splitlines()
    assert log[:4] == ["pip install", "pip --quiet", "pip --no-cache-dir", f"pip clusterbench=={__version__}"]
    assert log[-1] == f"torchrun {EVIL}"
    amd = yaml.safe_load(_cb("launch", "k8s", "--gpu-resource", "amd.com/gpu", "--install",
                             "clusterbench @ https://example.org/cb-0.1-py3-none-any.whl", "--", "net").stdout)
    assert _master(amd)["image"] == "rocm/pytorch:latest"
    assert _master(amd)["command"][4] == "clusterbench @ https://example.org/cb-0.1-py3-none-any.whl"
    own = yaml.safe_load(_cb("launch", "k8s", "--image", "registry.example/cb:0.1", "--no-install",
                             "--", "net").stdout)
    assert _master(own)["command"][:4] == ["torchrun", "--nnodes=1", "--nproc_per_node=1", "-m"]


def test_k8s_json_is_added_once_and_only_where_the_command_has_it():
    r = _cb("launch", "k8s", "--", "stream", "--json")
    assert _master(yaml.safe_load(r.stdout))["command"][-2:] == ["stream", "--json"]
    r = _cb("launch", "k8s", "--", "results", "list")
    assert _master(yaml.safe_load(r.stdout))["command"][-2:] == ["results", "list"]
    assert "has no --json" in r.stderr


def test_dstack_secret_and_install():
    from clusterbench import __version__

    r = _cb("launch", "dstack", "--nodes", "2", "--gpus-per-node", "8", "--db-secret", "team_db",
            "--setup", "nvidia-smi", "--", "coll", "all_reduce")
    assert r.returncode == 0, r.stderr
    doc = yaml.safe_load(r.stdout)
    jsonschema.validate(doc, DSTACK_SCHEMA)
    assert doc["env"] == ["CLUSTERBENCH_DB=${{ secrets.team_db }}"]
    assert doc["commands"][:2] == ["nvidia-smi", f"pip install --quiet --no-cache-dir clusterbench=={__version__}"]
    assert shlex.split(doc["commands"][-1])[-3:] == ["coll", "--json", "all_reduce"]
    r = _cb("launch", "dstack", "--no-install", "--", "net")
    assert [c.split()[0] for c in yaml.safe_load(r.stdout)["commands"]] == ["torchrun"]
    for bad in ("team-db", "x }}", "secrets.a"):
        r = _cb("launch", "dstack", "--db-secret", bad, "--", "net")
        assert r.returncode == 2 and "invalid --db-secret" in r.stderr


def test_torchrun_env_without_hosts_reaches_the_ranks(tmp_path, monkeypatch):
    """--env without --hosts: printed as the line's environment, and given to torchrun when run."""
    r = _cb("launch", "torchrun", "--rdzv-endpoint", "node1:29400", "--env", "NCCL_IB_HCA=mlx5_0",
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
    r = _cb("launch", "torchrun", "--rdzv-endpoint", "node1:29400", "--env", "NCCL_IB_HCA=mlx5_0",
            "--env", f"EVIL={EVIL}", "--", "net")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "env").read_text().splitlines() == ["mlx5_0", EVIL]
