"""``clusterbench env``: this host's inventory; ``clusterbench env diff``: drift between runs or hosts."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import click

from clusterbench.cli.options import db_option, json_option, since_option
from clusterbench.envinfo import diff as envdiff
from clusterbench.envinfo import inventory
from clusterbench.envinfo.context import cpu_count
from clusterbench.errors import UsageError
from clusterbench.judge.environments import NoHosts, environment_diffs, stored_environments
from clusterbench.printable import printable
from clusterbench.report.jsonl import difference_line, emit, inventory_line, note_line, summary_line
from clusterbench.store.selectors import GRAMMAR
from clusterbench.units import compact

SELECTOR_HELP = f"RUN is {GRAMMAR} (see README, 'Selecting runs')."
KEY_WIDTH, MAX_KEY_WIDTH = 44, 96   # env diff's key column: at least, at most


def _size(n: Any) -> str:
    if isinstance(n, bool) or not isinstance(n, (int, float)):
        return str(n) if n else "?"
    if not n > 0:   # unknown, or no size at all (negative, NaN)
        return "?"
    try:
        return f"{compact(n / 2**30, 1)} GiB"
    except OverflowError:   # a stored inventory is JSON: any integer, even past what a float holds
        return f"{Decimal(n) / 2**30:.6g} GiB"


def _q(value: Any) -> Any:
    """Unknown values print as '?'."""
    return "?" if value is None else value


# A stored inventory is whatever JSON its run carried (an imported run line, an older version):
# a section of another shape prints as unknown rather than stopping the command.
def _cpus(cpulist: Any) -> Any:
    """A NUMA node's cpulist; an empty one is a node of memory only (HBM, CXL, a GPU's memory)."""
    return "none" if cpulist == "" else _q(cpulist)


def _d(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _ds(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _bytes(n: Any) -> str:
    """A size in the largest binary unit that keeps it readable: 64 KiB, 16 GiB, 2 MiB."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        return str(n) if isinstance(n, str) and n else "?"
    for unit, name in ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= unit:
            return f"{n / unit:.1f}".rstrip("0").rstrip(".") + f" {name}"
    return f"{n} B"


def _cpus_of(cpu_max: Any) -> str:
    """``"50000 100000"`` -> ``" (0.5 CPU)"``: what a cgroup's quota allows."""
    words = cpu_max.split() if isinstance(cpu_max, str) else []
    if len(words) == 2 and words[0].isdigit() and words[1].isdigit() and int(words[1]):
        return f" ({round(int(words[0]) / int(words[1]), 3):g} CPU)"
    return " (no limit)" if words[:1] == ["max"] else ""


def _limit(r: Any, size: bool = False) -> str:
    r = _d(r)
    soft, hard = (_bytes(v) if size and isinstance(v, int) else _q(v) for v in (r.get("soft"), r.get("hard")))
    return f"{soft}" if soft == hard else f"{soft} (hard {hard})"


def context_lines(inv: dict[str, Any]) -> list[str]:
    """The execution context: cgroup limits, the CPUs and limits the process and each rank got,
    /dev/shm, huge pages, the network namespace."""
    cg, proc, ns, mem = _d(inv.get("cgroup")), _d(inv.get("process")), _d(inv.get("netns")), _d(inv.get("memory"))
    lines = []
    if cg.get("mode") or ns.get("inode") is not None:   # (an inventory stored before these existed: none)
        mode = cg.get("mode")
        parts = [f"cgroup {mode or '?'}" + (f" {cg['path']}" if cg.get("path") else "")]
        if mode:
            parts.append(f"cpu.max {_q(cg.get('cpu_max'))}{_cpus_of(cg.get('cpu_max'))}")
            memory = cg.get("memory_max")
            parts.append(f"memory.max {memory if memory == 'max' else _bytes(memory)}")
            parts.append(f"cpuset {_q(cg.get('cpuset_cpus'))} (mems {_q(cg.get('cpuset_mems'))})")
        if ns:
            same = {True: ", as PID 1's", False: ", not PID 1's"}.get(ns.get("same_as_pid1"), "")
            parts.append(f"netns {_q(ns.get('inode'))}{same}")
        lines.append("context   " + "; ".join(parts))
    if proc.get("cpus_allowed") or proc.get("rlimits") or mem.get("shm_bytes") is not None:
        limits = _d(proc.get("rlimits"))
        parts = [f"CPUs {_q(proc.get('cpus_allowed'))}" + (f" ({n})" if (n := cpu_count(proc.get("cpus_allowed"))) else "")]
        parts += [f"{k} {_limit(limits[k], k == 'memlock')}" for k in ("memlock", "nofile") if k in limits]
        parts.append(f"/dev/shm {_bytes(mem.get('shm_bytes'))}")
        pages = f"{_q(mem.get('hugepages_total'))} x {_bytes(mem.get('hugepage_size_bytes'))}"
        parts.append(f"huge pages {pages}, THP {_q(mem.get('thp_enabled'))}")
        lines.append("process   " + "; ".join(parts))
    ranks = _ds(inv.get("ranks"))
    if ranks:
        lines.append("ranks     " + "; ".join(f"{_q(r.get('rank'))}: CPUs {_q(r.get('cpus'))}" for r in ranks))
    return lines


def _nic(n: dict[str, Any]) -> str:
    mbps = n.get("speed_mbps")
    speed = f"{mbps / 1000:g} Gb/s" if isinstance(mbps, (int, float)) and not isinstance(mbps, bool) and mbps \
        else "speed ?"
    kind = n.get("kind") or ("virtual" if n.get("virtual") else "?")
    if n.get("pf"):
        kind += f" of PF {n['pf']}"
    extra = "".join((f", port of {n['master']}" if n.get("master") else "",
                     f", rdma {','.join(map(str, n['rdma']))}" if isinstance(n.get("rdma"), list) and n["rdma"] else "",
                     f", {n['sriov_vfs']} VFs" if n.get("sriov_vfs") else "",
                     ", default route" if n.get("default_route") is True else ""))
    return (f"nic       {n.get('name')}: {kind}, {_q(n.get('operstate'))}, {speed}, MTU {_q(n.get('mtu'))}, "
            f"driver {n.get('driver') or ('virtual' if n.get('virtual') else '?')}, pci {n.get('pci') or '-'}{extra}")


def inventory_lines(inv: dict[str, Any]) -> list[str]:
    v = _d(inv.get("virtualization"))
    cpu, mem, os_ = _d(inv.get("cpu")), _d(inv.get("memory")), _d(inv.get("os"))
    where = v.get("container") or "bare process"
    if v.get("vm"):
        vendor = _d(v.get("dmi")).get("sys_vendor")
        where += " in a VM" + (f" ({vendor})" if vendor else "")
    lines = [
        f"host      {_q(inv.get('host'))}: {_q(os_.get('name'))}, kernel {_q(os_.get('kernel'))}, {_q(os_.get('arch'))}; {where}",
        f"cpu       {_q(cpu.get('model'))}: {cpu.get('sockets') or '?'} socket(s), {cpu.get('cores') or '?'} core(s), "
        f"{cpu.get('logical') or '?'} logical; governor {cpu.get('governor') or '?'}",
        f"memory    {_size(mem.get('total_bytes'))}; NUMA nodes: "
        + (", ".join(f"{_q(n.get('node'))} (cpus {_cpus(n.get('cpus'))}, {_size(n.get('memory_bytes'))})"
                     for n in _ds(cpu.get("numa_nodes"))) or "?"),
        *context_lines(inv),
        "versions  " + ", ".join(f"{k} {val}" for k, val in _d(inv.get("versions")).items()),
    ]
    if _d(inv.get("drivers")):
        lines.append("drivers   " + ", ".join(f"{k} {val}" for k, val in inv["drivers"].items()))
    gpus = _ds(inv.get("gpus"))
    lines.append(f"gpus      {len(gpus)} (via {_q(inv.get('gpu_source'))})" if gpus else
                 "gpus      none found: " + ("; ".join(f"{k}: {e}" for k, e in _d(inv.get("gpu_library_errors")).items()) or "no GPU"))
    for g in gpus:
        part = ""
        if g.get("compute_partition") or g.get("memory_partition"):
            part = f", partition {g.get('compute_partition')}/{g.get('memory_partition')}"
        if isinstance(g.get("mig"), dict):
            part += f", MIG {'on' if g['mig'].get('current') else 'off'}"
        lines.append(f"  gpu {_q(g.get('index'))}: {_q(g.get('name'))}, {_size(g.get('memory_bytes'))}, "
                     f"pci {_q(g.get('pci'))}, uuid {_q(g.get('uuid'))}{part}")
    for d in _ds(inv.get("pcie")):
        link = _d(d.get("link"))
        if link.get("max_width") or link.get("max_speed_gts"):
            lines.append(f"pcie      {_q(d.get('bdf'))} {_q(d.get('kind'))} {_q(d.get('vendor'))}: "
                         f"x{_q(link.get('current_width'))}/x{_q(link.get('max_width'))} "
                         f"{_q(link.get('current_speed_gts'))}/{_q(link.get('max_speed_gts'))} GT/s, "
                         f"numa {_q(d.get('numa_node'))}")
    for n in _ds(inv.get("nics")):
        lines.append(_nic(n))
    for r in _ds(inv.get("rdma")):
        for p in _ds(r.get("ports")):
            gids = ", ".join(f"{g.get('index')}={g.get('type') or '?'}({g.get('netdev') or '-'})" for g in _ds(p.get("gids")))
            lines.append(f"rdma      {r.get('name')} port {p.get('port')}: {_q(p.get('state'))}, {_q(p.get('rate'))}, "
                         f"{_q(p.get('link_layer'))}, fw {_q(r.get('fw_ver'))}; GIDs {gids or 'none'}")
    env = _d(inv.get("env"))
    lines.append("env       " + (" ".join(f"{k}={val}" for k, val in env.items()) or "(no NCCL_/RCCL_/UCX_/HIP_ variables set)"))
    return lines


@click.group("env", invoke_without_command=True)
@json_option("one `inventory` line for this host")
@click.option("--root", default="/", hidden=True, help="Read host files under this root (tests).")
@click.pass_context
def env(ctx: click.Context, as_json: bool, root: str) -> None:
    """This host's inventory: OS, container/VM, cgroup limits, CPU affinity, memlock and other
    limits, /dev/shm, huge pages, network namespace, CPUs and NUMA, memory, GPUs, versions,
    partition modes, PCIe links, NICs (physical, SR-IOV VF, veth, bond, ...), RDMA ports and the
    NCCL/RCCL/UCX environment. The same inventory is stored with every run (see `clusterbench env
    diff`)."""
    if ctx.invoked_subcommand:
        if as_json:  # it would say nothing about the subcommand's output
            raise UsageError(f"--json goes after the subcommand: clusterbench env {ctx.invoked_subcommand} --json")
        return
    inv = inventory.collect(root)
    if as_json:
        emit(inventory_line(inv, None))
        return
    for line in inventory_lines(inv):
        print(printable(line))


@env.command("show", epilog=SELECTOR_HELP)
@click.argument("selectors", nargs=-1, required=True, metavar="RUN...")
@click.option("--host", default=None, help="The host to show (default: every host of the run).")
@json_option("an `inventory` line per run and host")
@since_option
@db_option
def show_cmd(selectors: tuple[str, ...], host: str | None, as_json: bool, since: str | None,
             db: str | None) -> None:
    """The inventory stored with each RUN (e.g. last), one block per host."""
    sections: list[list[str]] = []
    for shown in stored_environments(db, selectors, host, since):
        if isinstance(shown, NoHosts):  # e.g. an imported log: say so rather than print nothing
            text = f"run {shown.run.id} stored no hosts: no inventory to show"
            if as_json:
                emit(note_line(text, shown.run.id))
            else:
                sections.append([f"# {text}"])
            continue
        if as_json:
            emit(inventory_line(shown.inventory, shown.run.id))
            continue
        sections.append([f"# run {shown.run.id}, host {shown.host}"
                         + ("" if shown.full else " (no inventory stored: versions and env only)"),
                         *inventory_lines(shown.inventory)])
    for i, lines in enumerate(sections):   # a blank line between sections
        if i:
            print()
        for line in lines:
            print(printable(line))


def _shown(value: Any) -> str:
    if value is None:
        return "(unset)"
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _print(diffs: list[envdiff.Difference], left: str, right: str, as_json: bool) -> None:
    if as_json:
        for d in diffs:
            emit(difference_line(d.to_dict(), left, right))
        emit(summary_line("env diff", left=left, right=right, differences=len(diffs)))
        return
    print(printable(f"# env diff: {left} vs {right}: {len(diffs)} difference(s)"))
    # the key column as wide as the longest key shown (a long NIC or variable name), within bounds
    width = min(max([KEY_WIDTH, *(len(d.key) for d in diffs)]), MAX_KEY_WIDTH)
    for d in diffs:
        a, b = _shown(d.a), _shown(d.b)
        if a == b:   # values that print alike ("9000" and 9000, "(unset)" and none): as JSON, so they differ
            a, b = json.dumps(d.a, default=str), json.dumps(d.b, default=str)
        print(printable(f"{d.category:<12} {d.key:<{width}} {a}  ->  {b}"))


@env.command("diff", epilog=SELECTOR_HELP + " Each side must pick one run.")
@click.argument("run_a", metavar="RUN_A")
@click.argument("run_b", metavar="[RUN_B]", required=False)
@click.option("--hosts", default=None, metavar="HOST_A[,HOST_B]",
              help="Hosts to compare: two hosts of one run, or the host to take from each of two runs.")
@click.option("--all", "show_identity", is_flag=True,
              help="Also show per-host identity (serials, UUIDs, MAC addresses, GID values).")
@click.option("--exit-code", "exit_code", is_flag=True,
              help="Exit 1 when there are differences, 0 when there are none (as git diff --exit-code).")
@json_option("a `difference` line per difference, then a `summary` per pair compared")
@since_option
@db_option
def diff_cmd(run_a: str, run_b: str | None, hosts: str | None, show_identity: bool, exit_code: bool,
             as_json: bool, since: str | None, db: str | None) -> int:
    """What differs between the environments of RUN_A and RUN_B (runs, or 'local' for this host
    now): versions, drivers and firmware, partition modes, NIC settings, NCCL/RCCL/UCX
    variables. With one run, compares its hosts: --hosts A,B, or every host against the first."""
    names = [h.strip() for h in hosts.split(",")] if hosts else []
    if len(names) > 2 or any(not h for h in names):
        raise UsageError(f"--hosts {hosts!r}: expected HOST_A or HOST_A,HOST_B")
    found = 0
    for d in environment_diffs(db, run_a, run_b, names, since, show_identity):
        found += len(d.differences)
        _print(d.differences, d.left, d.right, as_json)
    return 1 if exit_code and found else 0


commands = [env]
