"""The validated configuration of a transfer run: the matrices and tests to run on this host."""

from __future__ import annotations

from importlib import resources

from clusterbench.bench import devices as devs
from clusterbench.bench.transfer import engine, lang
from clusterbench.bench.transfer.main import TransferConfig
from clusterbench.bench.transfer.matrices import MATRICES, Planned, default_kinds, plan
from clusterbench.choices import parse_choices
from clusterbench.errors import UsageError
from clusterbench.ranks.context import resolve_device_type
from clusterbench.textfile import read_user_text
from clusterbench.units import parse_size

BUILTIN_CONFIGS = {"example": "data/transfer_example.cfg"}
# every timed iteration's time of every transfer is kept (engine.TestResult): a count past this
# is a typo that would run until --timeout, not a measurement
MAX_ITERATIONS = 1_000_000


def _config_text(path: str) -> str:
    if path in BUILTIN_CONFIGS:
        return resources.files("clusterbench").joinpath(BUILTIN_CONFIGS[path]).read_text()
    return read_user_text(path, "--config")


def _executors(methods: str) -> list[str]:
    # copy engine (DMA) and kernel (GFX) in TransferBench's executor letters
    executors = {"copy_engine": "D", "kernel": "G"}
    return [executors[m] for m in parse_choices(methods, tuple(executors), "--method")]


def _cmdline_tests(tests: tuple[str, ...], nbytes: int) -> list[lang.Test]:
    out = []
    for i, t in enumerate(tests):
        parsed = lang.parse_line(t, nbytes, f"cmdline {i + 1}")
        if parsed is None:
            raise UsageError(f"invalid --test {t!r}: empty")
        out.append(parsed)
    return out


def _matrices(matrix: str) -> list[str]:
    return list(parse_choices(matrix, tuple(MATRICES), "--matrix"))


def build_plan(matrix: str | None, tests: tuple[str, ...], config: str | None, nbytes: int,
               methods: str, topo: engine.Topology, notes: list[str] | None = None,
               gpu_ids: list[int] | None = None) -> list[Planned]:
    """The tests to run. Tests from a config file that name devices this host lacks are
    skipped with a note (a file serves many machines); anything else out of range is an error."""
    wanted_methods = _executors(methods)
    custom: list[tuple[int, lang.Test]] = []
    from_file: list[lang.Test] = []
    if config:
        text = _config_text(config)   # (its errors name the file already)
        try:
            from_file = lang.parse_text(text, nbytes)
        except UsageError as e:
            raise UsageError(f"--config {config}: {e}") from None
        for i, t in enumerate(from_file, 1):
            try:
                engine.validate(t, topo)
            except UsageError as e:
                if notes is None:
                    raise
                notes.append(f"skipped {e}")
                continue
            custom.append((i, t))
    custom += enumerate(_cmdline_tests(tests, nbytes), len(from_file) + 1)
    if matrix is None:
        # a --config whose every test was skipped asked for those tests, not for the default matrices
        kinds = [] if custom or config else default_kinds(topo)
    elif matrix.strip().lower() == "all":
        kinds = default_kinds(topo)
    else:
        kinds = _matrices(matrix)
        for k in kinds:
            if k != "h2h" and topo.gpus == 0:
                raise UsageError(f"--matrix {k} needs GPUs; this host has none (use h2h)")
    planned = plan(kinds, topo, nbytes, list(dict.fromkeys(wanted_methods)), gpu_ids)
    for index, t in custom:
        engine.validate(t, topo)
        method = "+".join(sorted({x.exe.name for x in t.transfers}))
        direction = "uni"
        host = "pageable" if any(m.kind == "U" for x in t.transfers for m in x.srcs + x.dsts) else (
            "pinned" if topo.gpus and any(m.kind == "C" for x in t.transfers for m in x.srcs + x.dsts)
            else "")
        planned.append(Planned(t, "config", direction, method, host, index))
    for p in planned:
        engine.validate(p.test, topo)
    if not planned:
        more = f" (and {len(notes) - 1} more test(s) skipped)" if notes and len(notes) > 1 else ""
        raise UsageError("nothing to run" + (f": {notes[0]}{more}" if notes else ""))
    return planned




def transfer_options(matrix: str | None, tests: tuple[str, ...], nbytes: str, methods: str, iterations: int,
                     warmups: int) -> int:
    """The checks of ``clusterbench transfer``'s options that need neither this host's devices and
    memory nor a --config file, which is the node's (a sweep's test, a qualify step are checked so
    before any node runs them); the bytes per transfer. Tests are checked against the devices later."""
    if str(nbytes).strip().startswith("-"):
        raise UsageError(f"invalid --bytes {nbytes!r}: must be positive")
    size = parse_size(nbytes, "--bytes")
    if size <= 0 or size % 4:
        raise UsageError(f"invalid --bytes {nbytes!r}: must be a positive multiple of 4")
    if not 1 <= iterations <= MAX_ITERATIONS:
        raise UsageError(f"--iterations must be 1..{MAX_ITERATIONS}, got {iterations}")
    if not 0 <= warmups <= MAX_ITERATIONS:
        raise UsageError(f"--warmups must be 0..{MAX_ITERATIONS}, got {warmups}")
    _executors(methods)
    _cmdline_tests(tests, size)
    if matrix is not None:   # (which matrices apply, and so what all means, is the node's)
        _matrices(matrix)
    return size


def transfer_config(matrix: str | None, tests: tuple[str, ...], config: str | None, nbytes: str, methods: str,
                 iterations: int, warmups: int, check: bool, device: str,
                 devices: str | None) -> TransferConfig:
    """Validate ``clusterbench transfer``'s options into the tests to run on this host."""
    size = transfer_options(matrix, tests, nbytes, methods, iterations, warmups)
    device_type = resolve_device_type(device)
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
    note = _methods_unused(methods, planned)
    if note:
        notes.append(note)
    _host_memory_fits(planned)
    return TransferConfig(tuple(planned), iterations, warmups, check, tuple(notes), device_type)


def _methods_unused(methods: str, planned: list[Planned]) -> str | None:
    """Why a --method other than the copy engine changes nothing in this run: only the p2p and
    a2a matrices choose their GPU copies by it (h2d/d2h use the copy engine, h2h the CPU, a
    config test the executor it names)."""
    wanted = [m for m in parse_choices(methods, ("copy_engine", "kernel"), "--method") if m != "copy_engine"]
    if not wanted or any(p.kind in ("p2p", "a2a") for p in planned):
        return None
    kinds = ", ".join(dict.fromkeys(p.kind for p in planned))
    return (f"--method {','.join(wanted)} not used: only the p2p and a2a matrices copy by it; this run "
            f"has {kinds}")


def _host_memory_fits(planned: list[Planned]) -> None:
    """Refuse, before any rank starts, a test whose host buffers exceed the free host memory
    (a test's buffers are all allocated at once; device memory is checked by the device)."""
    free = devs.free_memory(devs.rank_device("cpu", [0], 0))
    for p in planned:
        need = sum(x.bytes * sum(m.is_host for m in (*x.srcs, *x.dsts)) for x in p.test.transfers)
        if need > free:
            raise UsageError(f"test {p.test.name}: its host buffers need {need} bytes, more than the {free} bytes "
                             "of free host memory (use a smaller --bytes)")
