"""``clusterbench launch ENGINE [options] -- <clusterbench command>``: run a clusterbench command
across nodes with Slurm, Open MPI, torchrun, Kubernetes (Kubeflow) or dstack."""

from __future__ import annotations

import re
import shlex
import tempfile
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from clusterbench import __version__
from clusterbench.choices import GPU_VENDORS
from clusterbench.cli.argv_check import check_argv
from clusterbench.cli.bounds import (
    MAX_GPUS_PER_NODE,
    MAX_NODES,
    MAX_PROCS_PER_NODE,
    POSITIVE,
    Count,
)
from clusterbench.cli.options import json_option, quiet_option, refuse_together
from clusterbench.errors import ClusterbenchError, UsageError
from clusterbench.launch import dstack, k8s, mpi, netenv, slurm
from clusterbench.launch import torchrun as tr
from clusterbench.launch.common import (
    DEFAULT_AGENT,
    Spec,
    bench_command,
    check_text,
    env_argv,
    parse_env,
    parse_hosts,
    remote_line,
    split_agent,
    with_store_args,
)
from clusterbench.launch.process import run_argv
from clusterbench.printable import printable
from clusterbench.report.outfile import write_text
from clusterbench.report.progress import Progress, wanted
from clusterbench.store.location import for_other_hosts

_CTX = {"ignore_unknown_options": True, "allow_interspersed_args": False}


def _common(f: Any) -> Any:
    for d in reversed([
        click.option("--nodes", type=Count(1, MAX_NODES), default=None, help="Nodes to run on."),
        click.option("--procs-per-node", type=Count(1, MAX_PROCS_PER_NODE), default=None,
                     help="Processes (ranks) per node (default: --gpus-per-node, else 1)."),
        click.option("--gpus-per-node", type=Count(0, MAX_GPUS_PER_NODE), default=0, show_default=True,
                     help="GPUs per node to request; one rank per GPU."),
        click.option("--env", "envs", multiple=True, metavar="KEY=VALUE",
                     help="Environment for every rank, e.g. NCCL_IB_GID_INDEX=3 (repeatable)."),
        click.option("--auto-net-env", is_flag=True,
                     help="Detect RDMA devices and interfaces on this node and set NCCL_IB_HCA, "
                          "NCCL_SOCKET_IFNAME, NCCL_IB_GID_INDEX (explicit --env wins)."),
        click.option("--sys-root", default="/sys", hidden=True),
        click.option("--print", "print_only", is_flag=True, help="Only print what would run."),
        click.argument("command", nargs=-1, type=click.UNPROCESSED),
    ]):
        f = d(f)
    return f


def _check_options() -> None:
    """No option value may hold a control character: a newline in a value would end a line of
    the generated script, directive or hostfile. Nor may one be empty: an empty --db, --image,
    --schedule or --db-secret (a script's unset variable) must not quietly mean "not given".
    (Command words are checked by bench_command.)"""
    ctx = click.get_current_context()
    flags = {p.name: max(p.opts, key=len) for p in ctx.command.params if p.opts}   # as typed: --time
    for name, value in ctx.params.items():
        if name == "command":
            continue
        for v in value if isinstance(value, tuple) else (value,):
            if isinstance(v, str):
                flag = flags.get(name, "--" + name.replace("_", "-"))
                check_text(v, flag)
                if not v:
                    raise UsageError(f"invalid {flag} '': empty")


def _check_no_password(words: list[str], env: dict[str, str]) -> None:
    """Ranks are handed database URLs without their password (it would show in every process
    list and in the printed script or manifest): one in the command or in --env
    CLUSTERBENCH_DB is an error, as the way to authenticate is a passfile or a Secret."""
    from clusterbench.store.location import redact

    for what, text in [*(("the command after --", w) for w in words),
                       *(("--env CLUSTERBENCH_DB", v) for k, v in env.items() if k == "CLUSTERBENCH_DB")]:
        if redact(text) != text:
            raise UsageError(f"{what} holds a URL with a password ({redact(text)!r}): ranks "
                             "authenticate with a passfile (~/.pgpass, --env PGPASSFILE=...) or, on "
                             "Kubernetes, --db-secret")


def _with_json(words: list[str]) -> list[str]:
    """``words`` with ``--json`` after the subcommand, so the pod's log carries the JSON lines
    ``clusterbench import -`` reads; unchanged when it is there or the command has no --json."""
    ctx = click.get_current_context().find_root()
    root = ctx.command
    cmd = root.get_command(ctx, words[0]) if isinstance(root, click.Group) else None
    takes_json = (cmd is not None and not isinstance(cmd, click.Group)
                  and any("--json" in p.opts for p in cmd.params))
    if not takes_json:
        click.echo(f"# {words[0]} has no --json: its results reach home only through --db-secret",
                   err=True)
        return words
    return words if "--json" in words else [words[0], "--json", *words[1:]]


def _spec(kw: dict[str, Any], nodes_default: int = 1, store: tuple[str | None, dict[str, str]] = (None, {}),
          json_lines: bool = False) -> Spec:
    env: dict[str, str] = {}
    if kw["auto_net_env"]:
        choice = netenv.choose(kw["sys_root"])
        for reason in choice.reasons:
            click.echo(f"# auto-net-env: {reason}", err=True)
        click.echo("# auto-net-env: " + " ".join(f"{k}={v}" for k, v in choice.env.items()), err=True)
        env.update(choice.env)
    env.update(parse_env(kw["envs"]))
    gpus = kw["gpus_per_node"]
    procs = kw["procs_per_node"] or (gpus if gpus else 1)
    command = bench_command(kw["command"])
    _check_no_password(command, env)   # first: a value refused below is quoted in its error
    # here, not as a failed job on every node: the syntax and the values a command checks
    # without the nodes' hardware (its check_params: sizes, ops, bounds)
    check_argv(command, "the command after --", values=True)
    words = with_store_args(command, *store)
    if json_lines:
        words = _with_json(words)
    return Spec(nodes=kw["nodes"] or nodes_default, procs_per_node=procs, gpus_per_node=gpus,
                env=env, command=words)


@click.group("launch")
def launch() -> None:
    """Run a clusterbench command across nodes: slurm, mpi, torchrun, k8s, dstack."""


# -- slurm ----------------------------------------------------------------------------------

@launch.command("slurm", context_settings=_CTX)
@_common
@click.option("--partition", default=None)
@click.option("--time", "time_limit", default="00:30:00", show_default=True)
@click.option("--job-name", default="clusterbench", show_default=True)
@click.option("--account", default=None)
@click.option("--output", default=None, help="sbatch --output (default slurm-%j.out).")
@click.option("--exclusive", is_flag=True)
@click.option("--nodelist", default=None, metavar="HOSTLIST",
              help="Run on these nodes (sbatch --nodelist): a,b or a Slurm hostlist rack[1-2]-gpu[01-04]; "
                   "--nodes defaults to their number.")
@click.option("--sbatch-opt", "extra", multiple=True, metavar="--KEY=VALUE", help="Extra #SBATCH line.")
@click.option("--script", "script_path", default=None, help="Write the script here (with --submit).")
@click.option("--submit", is_flag=True, help="Submit with sbatch.")
@click.option("--wait/--no-wait", default=True, show_default=True,
              help="With --submit: wait for the job (its state, queue and run time on stderr when it "
                   "is a terminal) and show the run its ranks stored.")
@click.option("--wait-timeout", type=POSITIVE, default=3600.0, show_default=True)
@click.option("--db", default=None, envvar="CLUSTERBENCH_DB",
              help="Database the ranks store into (on a shared file system).")
@json_option("with --submit --wait, the stored run: a `measurement` line per result, then the `run` record")
@quiet_option
def slurm_cmd(partition, time_limit, job_name, account, output, exclusive, nodelist, extra, script_path,
              submit, wait, wait_timeout, db, as_json, quiet, **kw) -> int | None:
    """Write an sbatch script that runs the command under srun; --submit sends it."""
    _check_options()
    refuse_together("print_only", "submit")
    if as_json and not (submit and wait):
        raise UsageError("--json prints the run a submitted job stored: give it with --submit (and --wait)")
    from clusterbench.store import default_db_path

    listed = len(slurm.nodelist_hosts(nodelist)) if nodelist else 1
    if nodelist and kw["nodes"] is not None and kw["nodes"] < listed:
        raise UsageError(f"--nodes {kw['nodes']} but --nodelist names {listed} nodes")
    launch_id = uuid.uuid4().hex[:12]
    db_path = for_other_hosts(db) if db else (str(default_db_path()) if submit else None)
    spec = _spec(kw, nodes_default=listed, store=(db_path, {"launch_id": launch_id} if submit else {}))
    opts = slurm.SlurmOptions(partition=partition, time=time_limit, job_name=job_name,
                              account=account, output=output, exclusive=exclusive, extra=tuple(extra),
                              nodelist=nodelist)
    script = slurm.sbatch_script(spec, opts)
    if kw["print_only"] or not submit:
        click.echo(script, nl=False)
        return
    path = Path(script_path) if script_path else \
        Path(tempfile.mkdtemp(prefix="clusterbench-slurm-")) / "job.sbatch"
    write_text(path, script, "--script")
    job = slurm.submit(str(path))
    if not quiet:
        click.echo(f"# submitted Slurm job {job} (script {path})", err=True)
    if not wait:
        return
    with Progress(wanted(quiet), f"Slurm job {job}: submitted") as shown:
        info = slurm.wait(job, wait_timeout, on_state=lambda i: shown.update(f"Slurm job {job}: {i.describe()}"))
    what = info.ended(job)
    said = slurm.job_error(info) if info.state != "COMPLETED" else None
    return _show_launched(db_path, launch_id, f"{what}, saying: {said}" if said else what, as_json, quiet)


def _show_launched(db: str | None, launch_id: str, what: str, as_json: bool, quiet: bool = False) -> int:
    from clusterbench.launch.collect import launched_run
    from clusterbench.report.jsonl import emit_all, run_objects
    from clusterbench.report.terminal import render_run

    run, ms = launched_run(db, launch_id, what)
    if as_json:
        emit_all(run_objects(run, ms))
    else:
        for line in render_run(run, ms):
            click.echo(line)
    if not quiet:
        click.echo(printable(f"# {what}: run {run.id} ({run.status}), {run.ranks} rank(s) on "
                             f"{', '.join(run.hosts)}"), err=True)
    for e in run.errors:
        click.echo(f"clusterbench: error: {printable(e)}", err=True)
    return 0 if run.status == "complete" else 1


# -- mpi ------------------------------------------------------------------------------------

@launch.command("mpi", context_settings=_CTX)
@_common
@click.option("--hostfile", default=None, metavar="PATH",  # a str: click.Path fails on a NUL
              help="Open MPI hostfile: 'host slots=N' per line.")
@click.option("--hosts", default=None, metavar="HOSTLIST",
              help="Instead of --hostfile: a,b or a Slurm hostlist gpu[01-04], --procs-per-node slots each.")
@click.option("--mca", "mcas", multiple=True, metavar="KEY=VALUE",
              help="Open MPI MCA parameter, e.g. btl_tcp_if_include=eth0 (repeatable).")
@click.option("--agent", default=None, help="Launch agent for remote hosts (Open MPI plm_rsh_agent; default ssh).")
@click.option("--oversubscribe", is_flag=True)
@click.option("--mpirun", "mpirun_exe", default="mpirun", show_default=True)
@click.option("--no-preflight", is_flag=True, help="Skip checking that every host answers first.")
@click.option("--wall-timeout", type=POSITIVE, default=3600.0, show_default=True,
              help="End mpirun after this many seconds.")
@click.option("--db", default=None, envvar="CLUSTERBENCH_DB")
def mpi_cmd(hostfile, hosts, mcas, agent, oversubscribe, mpirun_exe, no_preflight, wall_timeout, db,
            **kw) -> int | None:
    """Build and run mpirun from a hostfile (or --hosts); every rank runs the clusterbench command."""
    _check_options()
    if (hostfile is None) == (hosts is None):
        raise UsageError("give --hostfile PATH or --hosts HOSTLIST (one of them)")
    if hostfile is not None:
        slots = mpi.read_hostfile(hostfile)
    else:
        per_node = kw["procs_per_node"] or kw["gpus_per_node"] or 1
        slots = [mpi.HostSlots(h, per_node) for h in parse_hosts(hosts)]
    spec = _spec(kw, nodes_default=len(slots),
                 store=(for_other_hosts(db), {}))
    launch_id = uuid.uuid4().hex[:12]
    stored_in = None if kw["print_only"] else _store_of_rank0(spec, db, slots[0].host)
    if stored_in is not None:   # rank 0's run carries this launch's id, to be found after mpirun
        spec = replace(spec, command=with_store_args(spec.command, None, {"launch_id": launch_id}))
    argv = mpi.mpirun_argv(spec, slots, hostfile=str(Path(hostfile).resolve()) if hostfile else None,
                           mca=mpi.parse_mca(mcas),
                           agent=agent, oversubscribe=oversubscribe, mpirun=mpirun_exe)
    if kw["print_only"]:
        click.echo(shlex.join(argv))
        return
    if not no_preflight:
        bad = mpi.unreachable([h.host for h in slots[:spec.nodes]],
                              mpi.check_agent(agent) if agent else list(DEFAULT_AGENT))
        if bad:
            raise ClusterbenchError("unreachable host(s): "
                                    + "; ".join(f"{h}: {why}" for h, why in bad))
    code = run_argv(argv, wall_timeout, "mpirun")
    if code == 0 and stored_in is not None:
        from clusterbench.launch.collect import check_stored

        check_stored(stored_in, launch_id, "mpirun")
    return code


def _store_of_rank0(spec: Spec, db: str | None, first_host: str) -> str | None:
    """The database rank 0 stores the command's run into, when this command can see it: rank 0
    runs on the first host, and only there (this machine) is its database the one this process
    opens. None for a command that stores no run, or a rank 0 on another machine."""
    from clusterbench.cli.argv_check import parsed_command
    from clusterbench.store import default_db_path

    _cmd, params = parsed_command(spec.command)
    if not {"db", "tags"} <= params.keys() or not mpi.is_this_host(first_host):
        return None
    # as the rank reads it: launch --db (appended last, so it wins), its own --db, CLUSTERBENCH_DB
    # given with --env, else the default of the rank's environment, which mpirun hands on from here
    named = db or params["db"] or spec.env.get("CLUSTERBENCH_DB")
    return for_other_hosts(named) if named else str(default_db_path())



# -- torchrun -------------------------------------------------------------------------------

@launch.command("torchrun", context_settings=_CTX)
@_common
@click.option("--rdzv-endpoint", default=None, metavar="HOST:PORT",
              help="Rendezvous endpoint (default: the first of --hosts, port 29400).")
@click.option("--node-rank", type=Count(0, MAX_NODES), default=None, help="Static rendezvous: this node's rank.")
@click.option("--rdzv-id", default="clusterbench", show_default=True)
@click.option("--local-addr", default=None, help="This node's address (torchrun --local_addr).")
@click.option("--is-host/--not-host", "is_host", default=None,
              help="Whether this node hosts the c10d store (--rdzv_conf is_host=).")
@click.option("--join-timeout", type=POSITIVE, default=120.0, show_default=True,
              help="Seconds to wait for every node to join the rendezvous.")
@click.option("--hosts", default=None,
              help="Start torchrun on these hosts through --agent: a,b or a Slurm hostlist gpu[01-04].")
@click.option("--agent", default=None,
              help="ssh-like agent to reach --hosts: 'AGENT HOST WORD...' (default ssh).")
@click.option("--wall-timeout", type=POSITIVE, default=3600.0, show_default=True)
def torchrun_cmd(rdzv_endpoint, node_rank, rdzv_id, local_addr, is_host, join_timeout, hosts, agent,
                 wall_timeout, **kw) -> int | None:
    """PyTorch elastic launch: one torchrun per node (c10d rendezvous, or static with --node-rank).

    With --hosts, clusterbench starts torchrun on every host itself (like pdsh/ssh would) and
    names the host at fault when one never joins or fails."""
    _check_options()
    for only_one_node in ("node_rank", "local_addr", "is_host"):  # one node's settings: --hosts sets them per host
        refuse_together("hosts", only_one_node)
    host_list = parse_hosts(hosts) if hosts else None
    spec = _spec(kw, nodes_default=len(host_list) if host_list else 1)
    if host_list:
        rdzv_host, port = tr.parse_endpoint(rdzv_endpoint) if rdzv_endpoint else (host_list[0], tr.DEFAULT_PORT)
        if rdzv_host.removeprefix("[").removesuffix("]") != host_list[0]:
            # the store is on the first host: another one would be ignored
            raise UsageError(f"--rdzv-endpoint {rdzv_endpoint!r}: with --hosts the rendezvous host is the "
                             f"first of them ({tr.endpoint_of(host_list[0], port)})")
        endpoint = tr.endpoint_of(host_list[0], port)   # an IPv6 address in brackets
        agent_argv = split_agent(agent) if agent else list(DEFAULT_AGENT)
        if kw["print_only"]:
            for i, h in enumerate(host_list):
                line = tr.torchrun_argv(spec, endpoint, rdzv_id=rdzv_id, is_host=i == 0,
                                        local_addr=h, join_timeout=join_timeout)
                click.echo(shlex.join([*agent_argv, h, *remote_line([*env_argv(spec.env), *line])]))
            return
        result = tr.run_torchrun_on_hosts(host_list, agent_argv, spec, port=port, rdzv_id=rdzv_id,
                                          join_timeout=join_timeout, timeout=wall_timeout, echo=True)
        tr.check_result(result, endpoint, join_timeout)
        return
    if not rdzv_endpoint:
        raise UsageError("give --rdzv-endpoint HOST:PORT (or --hosts to start every node from here)")
    argv = tr.torchrun_argv(spec, rdzv_endpoint, node_rank=node_rank, rdzv_id=rdzv_id,
                            local_addr=local_addr, is_host=is_host, join_timeout=join_timeout)
    if kw["print_only"]:
        # --env reaches torchrun's ranks as the line's environment: `env K=V torchrun ...`
        line = shlex.join([*env_argv(spec.env), *argv])
        click.echo(line)
        click.echo(f"# on every node, e.g.: pdsh -w 'node[1-{spec.nodes}]' {shlex.quote(line)}")
        return
    return run_argv(argv, wall_timeout, "torchrun", env=spec.env)


# -- k8s and dstack -------------------------------------------------------------------------

def _install(install: str | None, no_install: bool) -> str | None:
    refuse_together("install", "no_install")
    if no_install:
        return None
    return install or k8s.DEFAULT_INSTALL


def _profile_vendor(words: list[str]) -> tuple[str, str] | None:
    """``(name, vendor)`` of the profile the command names (``qualify --profile amd-mi300x-oem``)
    when it says which GPUs it is for; None otherwise, or for a file only the pods have."""
    from clusterbench.cli.argv_check import parsed_command
    from clusterbench.judge.profiles import load_profile

    _cmd, params = parsed_command(words)
    name = params.get("profile_name")
    if not isinstance(name, str):
        return None
    try:
        profile = load_profile(name)
    except UsageError:   # a path in the image or a mounted volume: the pod reads it
        return None
    return (profile.name, profile.vendor) if profile.vendor else None


def _groups(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    if text.strip() in ("", "none"):
        return ()
    words = [w.strip() for w in text.split(",")]
    if not all(re.fullmatch(r"[0-9]{1,10}", w) for w in words):
        raise UsageError(f"invalid --supplemental-groups {text!r}: expected group ids, e.g. 44,109, or none")
    return tuple(int(w) for w in words)


_HOME_HELP = ("Results come home as JSON lines in the log (the command gets --json: "
              "`kubectl logs POD | clusterbench import -`) and, with --db-secret, in the team database.")


@launch.command("k8s", context_settings=_CTX, epilog=_HOME_HELP)
@_common
@click.option("--kind", type=click.Choice(["pytorchjob", "mpijob"]), default="pytorchjob", show_default=True)
@click.option("--name", default="clusterbench", show_default=True)
@click.option("--namespace", default=None)
@click.option("--vendor", type=click.Choice(GPU_VENDORS), default=None,
              help="The nodes' GPU vendor: GPU resource, default image and, for amd, the /dev/kfd and /dev/dri "
                   "mounts and video/render groups (default: what the command's --profile is for, else the "
                   "vendor --gpu-resource names, else nvidia).")
@click.option("--image", default=None,
              help=f"Container image with clusterbench (default {k8s.VENDORS['nvidia'].image}, "
                   f"{k8s.VENDORS['amd'].image} for amd: public PyTorch images, without clusterbench unless "
                   "--install-from; --kind mpijob needs one with Open MPI, sshd and clusterbench).")
@click.option("--install-from", default=None, metavar="WHEEL|INDEX_URL",
              help="Install clusterbench in the pod before the run: a wheel (a .whl path in the pod, or its "
                   f"URL), or {k8s.DEFAULT_INSTALL} from this package index. Default: nothing is installed, "
                   "the image must have clusterbench.")
@click.option("--install", default=None, metavar="REQUIREMENT",
              help="pip-install this requirement in the pod before the run, from the index pip is set up "
                   "with in the image (e.g. a git+https:// URL).")
@click.option("--no-install", is_flag=True, help="Install nothing: the image has clusterbench (the default).")
@click.option("--db-secret", default=None, metavar="NAME[:KEY]",
              help=f"Set {k8s.DB_ENV} in the pods from this Secret's key (default key "
                   f"{k8s.DEFAULT_SECRET_KEY}): the ranks store into the team database.")
@click.option("--gpu-resource", default=None,
              help="The GPU resource to request (default: the vendor's, nvidia.com/gpu or amd.com/gpu).")
@click.option("--supplemental-groups", default=None, metavar="GID,...",
              help=f"Groups of the GPU pods' processes (default for amd: {k8s.VIDEO_GID},{k8s.RENDER_GID}, video "
                   "and render as ROCm's Ubuntu images number them: give the GIDs of /dev/kfd and "
                   "/dev/dri/renderD* on the nodes; none for no groups).")
@click.option("--shm-size", default="16Gi", show_default=True, help="Memory-backed /dev/shm size.")
@click.option("--network", "networks", multiple=True,
              help="Multus NetworkAttachmentDefinition for a secondary network (repeatable).")
@click.option("--resource", "resources", multiple=True, metavar="NAME=COUNT",
              help="Extra resource, e.g. rdma/roce_gdr=1 (repeatable).")
@click.option("--schedule", default=None, metavar="CRON",
              help="A batch/v1 CronJob instead: run the command on --nodes nodes (one pod each) on this "
                   "cron schedule, e.g. '0 3 * * *' (nightly checks).")
@click.option("--time-zone", default=None, metavar="TZ", help="With --schedule: its time zone, e.g. Europe/Berlin.")
@click.option("--service-account", default=None, metavar="NAME",
              help="With --schedule: the pods' ServiceAccount (one allowed to patch Nodes, for --on-fail taint --apply).")
@click.option("--apply", "do_apply", is_flag=True, help="kubectl apply the manifest.")
def k8s_cmd(kind, name, namespace, vendor, image, install_from, install, no_install, db_secret, gpu_resource,
            supplemental_groups, shm_size, networks, resources, schedule, time_zone, service_account, do_apply,
            **kw) -> None:
    """Kubeflow PyTorchJob (Master + Workers running torchrun) or MPIJob manifest; with
    --schedule, a CronJob running the command on each node (e.g. a nightly qualify). The pods
    run the clusterbench of their image unless --install-from says where to get it."""
    _check_options()
    refuse_together("do_apply", "print_only")
    refuse_together("install", "install_from", "no_install")
    if (time_zone or service_account) and not schedule:
        raise UsageError("--time-zone and --service-account need --schedule")
    if schedule and kind != "pytorchjob":
        raise UsageError("--schedule makes a CronJob of single-node pods; it does not combine with --kind mpijob")
    spec = _spec(kw, json_lines=True)
    if kind == "mpijob" and (install is not None or install_from is not None):
        raise UsageError("--install does not apply to --kind mpijob, which runs the clusterbench of "
                         "its image (see docs/multi-node.md)")
    opts = k8s.K8sOptions(name=name, namespace=namespace, image=image, gpu_resource=gpu_resource,
                          shm_size=shm_size, networks=tuple(networks),
                          extra_resources=dict(parse_env_like(resources)),
                          install=None if kind == "mpijob" else install,
                          install_from=k8s.InstallFrom.parse(install_from) if install_from else None,
                          db_secret=k8s.SecretRef.parse(db_secret) if db_secret else None,
                          vendor=k8s.choose_vendor(vendor, _profile_vendor(spec.command), gpu_resource),
                          supplemental_groups=_groups(supplemental_groups))
    if schedule:
        doc = k8s.cronjob(spec, opts, schedule, time_zone, service_account)
    else:
        doc = k8s.pytorchjob(spec, opts) if kind == "pytorchjob" else k8s.mpijob(spec, opts)
    text = k8s.dump(doc)
    if not opts.installs and kind == "pytorchjob":   # (an MPIJob's image is always the user's)
        if image is None:   # a public PyTorch image: without clusterbench, the pods would fail
            click.echo(f"# the pods run the clusterbench of image {opts.image_ref} and install nothing at start: "
                       f"give an image that has clusterbench {__version__} (--image, docs/multi-node.md) or "
                       "--install-from WHEEL|INDEX_URL", err=True)
        else:
            click.echo(f"# the pods run the clusterbench of image {image}; nothing is installed at start", err=True)
    if do_apply and not kw["print_only"]:
        click.echo(k8s.apply(text))
        return
    click.echo(text, nl=False)


def parse_env_like(items: tuple[str, ...]) -> list[tuple[str, str]]:
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or not re.fullmatch(r"[0-9]+", value):
            raise UsageError(f"invalid --resource {item!r}: expected NAME=COUNT, e.g. rdma/roce_gdr=1")
        out.append((key, value))
    return out


@launch.command("dstack", context_settings=_CTX, epilog=_HOME_HELP.replace("kubectl logs POD", "dstack logs RUN"))
@_common
@click.option("--name", default="clusterbench", show_default=True)
@click.option("--image", default=None, help="Container image (default: dstack's base image).")
@click.option("--gpu", default=None, help="GPU name for resources, e.g. MI300X or H100.")
@click.option("--startup-order", type=click.Choice(dstack.STARTUP_ORDERS), default="workers-first",
              show_default=True)
@click.option("--stop-criteria", type=click.Choice(dstack.STOP_CRITERIA), default="all-done", show_default=True)
@click.option("--setup", multiple=True, help="Shell command run before clusterbench, as given (repeatable).")
@click.option("--install", default=None, metavar="REQUIREMENT",
              help=f"pip-install this before the run (default {k8s.DEFAULT_INSTALL}; a wheel or git URL "
                   "works too).")
@click.option("--no-install", is_flag=True, help="The image has clusterbench: install nothing.")
@click.option("--db-secret", default=None, metavar="NAME",
              help=f"Set {k8s.DB_ENV} from this dstack secret (${{{{ secrets.NAME }}}}): the ranks store "
                   "into the team database.")
def dstack_cmd(name, image, gpu, startup_order, stop_criteria, setup, install, no_install, db_secret,
               **kw) -> None:
    """dstack distributed task YAML (type: task, nodes: N) running torchrun on every node."""
    _check_options()
    spec = _spec(kw, json_lines=True)
    doc = dstack.task(spec, name=name, image=image, gpu=gpu, startup_order=startup_order,
                      stop_criteria=stop_criteria, setup=tuple(setup),
                      install=_install(install, no_install), db_secret=db_secret)
    click.echo(k8s.dump(doc), nl=False)


commands = [launch]
