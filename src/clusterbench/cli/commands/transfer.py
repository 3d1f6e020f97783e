"""``clusterbench transfer``: copy bandwidth matrices and TransferBench-style config tests."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import click

from clusterbench.bench import devices as devs
from clusterbench.bench.transfer import engine, lang
from clusterbench.bench.transfer.main import TransferConfig
from clusterbench.bench.transfer.matrices import MATRICES, Planned, default_kinds, plan
from clusterbench.cli.bench import run_benchmark_command
from clusterbench.cli.options import repeat_option, store_options
from clusterbench.dist import context as ctxmod
from clusterbench.dist.context import DistOptions
from clusterbench.dist.driver import Job
from clusterbench.errors import UsageError
from clusterbench.units import parse_size

BUILTIN_CONFIGS = {"example": "data/transfer_example.cfg"}


def _config_text(path: str) -> str:
    if path in BUILTIN_CONFIGS:
        return resources.files("clusterbench").joinpath(BUILTIN_CONFIGS[path]).read_text()
    try:
        return Path(path).read_text()
    except OSError as e:
        raise UsageError(f"cannot read --config {path!r}: {e.strerror or e}") from None


def build_plan(matrix: str | None, tests: tuple[str, ...], config: str | None, nbytes: int,
               methods: str, topo: engine.Topology, notes: list[str] | None = None,
               gpu_ids: list[int] | None = None) -> list[Planned]:
    """The tests to run. Tests from a config file that name devices this host lacks are
    skipped with a note (a file serves many machines); anything else out of range is an error."""
    wanted_methods = []
    for m in methods.split(","):
        m = m.strip().lower()
        if m not in ("copy_engine", "kernel", "all"):
            raise UsageError(f"unknown --method {m!r}: expected copy_engine, kernel or all")
        wanted_methods += ["D", "G"] if m == "all" else (["D"] if m == "copy_engine" else ["G"])
    custom: list[lang.Test] = []
    if config:
        for t in lang.parse_text(_config_text(config), nbytes):
            try:
                engine.validate(t, topo)
            except UsageError as e:
                if notes is None:
                    raise
                notes.append(f"skipped {e}")
                continue
            custom.append(t)
    for i, t in enumerate(tests):
        parsed = lang.parse_line(t, nbytes, f"cmdline {i + 1}")
        if parsed is None:
            raise UsageError(f"invalid --test {t!r}: empty")
        custom.append(parsed)
    if matrix is None:
        kinds = [] if custom else default_kinds(topo)
    elif matrix.strip().lower() == "all":
        kinds = default_kinds(topo)
    else:
        kinds = [k.strip().lower() for k in matrix.split(",") if k.strip()]
        for k in kinds:
            if k not in MATRICES:
                raise UsageError(f"unknown --matrix {k!r}: expected {', '.join(MATRICES)} or all")
            if k != "h2h" and topo.gpus == 0:
                raise UsageError(f"--matrix {k} needs GPUs; this host has none (use h2h)")
    planned = plan(kinds, topo, nbytes, list(dict.fromkeys(wanted_methods)), gpu_ids)
    for t in custom:
        engine.validate(t, topo)
        method = "+".join(sorted({x.exe.name for x in t.transfers}))
        direction = "uni"
        host = "pageable" if any(m.kind == "U" for x in t.transfers for m in x.srcs + x.dsts) else (
            "pinned" if topo.gpus and any(m.kind == "C" for x in t.transfers for m in x.srcs + x.dsts)
            else "")
        planned.append(Planned(t, "config", direction, method, host))
    for p in planned:
        engine.validate(p.test, topo)
    if not planned:
        raise UsageError("nothing to run" + (f": {notes[0]}" if notes else ""))
    return planned


@click.command("transfer")
@click.option("--matrix", default=None, metavar="h2d,d2h,p2p,a2a,h2h|all",
              help="Matrices to measure (default: all that apply; h2h on a host without GPUs).")
@click.option("--test", "tests", multiple=True, metavar="LINE",
              help="A test in transfer-language syntax, e.g. 'G0->G1 G1->G0' (repeatable).")
@click.option("--config", default=None, metavar="FILE|example",
              help="Tests from a TransferBench-style config file; 'example' runs the seed's six tests.")
@click.option("--bytes", "nbytes", default="64M", show_default=True, help="Bytes per transfer.")
@click.option("--method", "methods", default="copy_engine", show_default=True,
              help="GPU copies for p2p/a2a: copy_engine, kernel, or all.")
@click.option("--iterations", type=int, default=10, show_default=True)
@click.option("--warmups", type=int, default=3, show_default=True)
@click.option("--no-check", "no_check", is_flag=True, help="Skip the check of destination buffers.")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
              help="cpu: host copies only, even where GPUs exist.")
@click.option("--devices", default=None, metavar="all|0,1", help="GPUs the matrices cover (default all).")
@click.option("--timeout", type=click.FloatRange(min=1), default=300.0, show_default=True)
@repeat_option
@store_options
def transfer(matrix: str | None, tests: tuple[str, ...], config: str | None, nbytes: str,
             methods: str, iterations: int, warmups: int, no_check: bool, device: str,
             devices: str | None, timeout: float, repeat: int, as_json: bool, db: str | None, tags: tuple[str, ...]) -> None:
    """Copy bandwidth: host<->device, device<->device (uni/bi), all-to-all, custom tests.

    One process drives every device, as TransferBench does; tests run one after another and the
    transfers inside a test run at the same time.
    """
    if str(nbytes).strip().startswith("-"):
        raise UsageError(f"invalid --bytes {nbytes!r}: must be positive")
    size = parse_size(nbytes, "--bytes")
    if size <= 0 or size % 4:
        raise UsageError(f"invalid --bytes {nbytes!r}: must be a positive multiple of 4")
    if iterations < 1 or warmups < 0:
        raise UsageError("--iterations must be at least 1 and --warmups at least 0")
    device_type = ctxmod.resolve_device_type(device)
    topo = engine.topology()
    if device_type == "cpu":
        topo = engine.Topology(0, topo.numa_nodes, topo.numa_cpus)
    gpu_ids: list[int] | None = None
    if topo.gpus:
        gpu_ids = devs.parse_devices(devices, "cuda", topo.gpus)
    else:
        devs.parse_devices(devices, "cpu", 1)  # only validates: without GPUs the host is one device
    notes: list[str] = []
    planned = build_plan(matrix, tests, config, size, methods, topo, notes, gpu_ids)
    cfg = TransferConfig(tuple(planned), iterations, warmups, not no_check, tuple(notes))
    job = Job("clusterbench.bench.transfer.main:main", cfg,
              DistOptions(device=device_type, timeout=timeout), np=1)
    raise SystemExit(run_benchmark_command(job, "transfer", as_json=as_json, db=db, tags=tags,
                                           repeat=repeat))


commands = [transfer]
