"""rocblas-bench and hipblaslt-bench CSV result lines -> ``gemm`` records (GFLOPS -> TFLOP/s).

Both print a CSV header with ``<lib>-Gflops`` and ``us`` (hipblaslt-bench prefixes it with
``[0]:`` since 2024) followed by one value line per problem, which document copies sometimes wrap
or separate with blank lines. Columns are read by name, never by position: extra columns can come
before the performance ones (``HIPBLASLT_BENCH_FREQ``, ``_EFF``) or after them (``-v``: CPU-Gflops,
norm_error). ``<lib>-GB/s`` (hipblaslt-bench since 2024, newer rocblas-bench) is kept as the gemm
family's ``bandwidth``. rocblas-bench does not print the function or the data type: they come
from a command line in the log, else from the file name, else are left out (never guessed).

A figure no device could produce, from the printed GFLOPS or from 2*m*n*k*batch over the printed
time (a kernel that did not run reports microseconds for a multi-GFLOP GEMM), is stored with a
warning: above 1.5x the datasheet peak of the log's device for the data type, or of any device
clusterbench knows (data/peaks.yaml) when the device is not known.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from clusterbench import peaks
from clusterbench.families.gemm.spec import BANDWIDTH, BENCHMARK, TFLOPS, TIME
from clusterbench.ingest.common import (
    ImportedRun,
    add_warning,
    clean_lines,
    new_run,
    text_lines,
    to_float,
    to_int,
)
from clusterbench.ingest.registry import Importer, Parse, whole_text
from clusterbench.records import Measurement, Run

# rocblas/hipblaslt type codes and file-name words -> the gemm family's dtype names
_TYPES = {"s": "fp32", "f32_r": "fp32", "fp32": "fp32", "sgemm": "fp32", "d": "fp64", "f64_r": "fp64",
          "fp64": "fp64", "dgemm": "fp64", "h": "fp16", "f16_r": "fp16", "fp16_r": "fp16", "fp16": "fp16",
          "hgemm": "fp16", "bf16_r": "bf16", "bf16": "bf16", "i8_r": "int8", "int8": "int8", "i8": "int8",
          "f8_r": "fp8_e4m3", "fp8": "fp8_e4m3", "bf8_r": "fp8_e5m2", "xf32_r": "tf32", "tf32": "tf32"}
_NAME_WORDS = ("fp64", "fp32", "fp16", "bf16", "int8", "fp8", "tf32", "sgemm", "dgemm", "hgemm")


def _dtype_from_command(text: str) -> str | None:
    m = re.search(r"--a_type\s+(\S+)", text) or re.search(r"(?:^|\s)-r\s+(\S+)", text) \
        or re.search(r"--precision\s+(\S+)", text)
    return _TYPES.get(m.group(1).lower()) if m else None


def _dtype_from_name(name: str) -> str | None:
    low = name.rsplit("/", 1)[-1].lower()
    for word in _NAME_WORDS:
        if re.search(rf"(^|[^a-z0-9]){word}([^a-z0-9]|$)", low):
            return _TYPES[word]
    return None


def _function(cols: list[str], text: str) -> tuple[str, bool]:
    m = re.search(r"(?:-f|--function)\s+(\w+)", text)
    if m:
        return m.group(1), False
    if "grouped_gemm" in cols or "hipblaslt-Gflops" in cols:
        return "matmul", False  # hipblaslt-bench benchmarks hipblasLtMatmul
    if "stride_a" in cols:
        return ("gemm_strided_batched_ex" if "ldd" in cols else "gemm_strided_batched"), True
    return ("gemm_ex" if "ldd" in cols else "gemm"), True


# A line that runs one of the two tools with options: the function and type of the table after it
_COMMAND = re.compile(r"(?:^|[\s/])(?:rocblas|hipblaslt)-bench\S*\s+-")


def parse(text: str, name: str = "", tool: str = "rocblas-bench") -> list[ImportedRun]:
    lines = [ln.strip() for ln in clean_lines(text_lines(text))]
    run = new_run(tool, name)
    ms: list[Measurement] = []
    done: list[ImportedRun] = []   # one run per invocation: a command line after results starts the next
    cols: list[str] = []
    pending = ""
    # The command that made each table: the last command line before its header. A log of several
    # commands (or a --yaml run of several problems) gave every row the first command's function
    # and type. Without any command line before a header, the whole text is searched as before.
    command, context = "", text
    for line in lines:
        if not line:
            continue
        if _COMMAND.search(line):
            if ms:
                done.append(ImportedRun(run, ms))
                run, ms, cols, pending = new_run(tool, name), [], [], ""
            command = line
        m = re.match(r"hipBLASLt version:\s*(\S+)", line)
        if m:
            run.versions["hipblaslt"] = m.group(1)
            run.source = f"{tool} {m.group(1)}"
        m = re.match(r"Device ID \d+\s*:\s*(.+)$", line)
        if m:
            run.devices.append(m.group(1).strip())
        m = re.match(r"rocBLAS version:\s*(\S+)", line)
        if m:
            run.versions["rocblas"] = m.group(1)
            run.source = f"{tool} {m.group(1)}"
        if "warning" in line.lower() and "," not in line:   # e.g. rocblaslt: No paths matched (no kernels)
            add_warning(run, line)
            continue
        if "Gflops" in line and "," in line:
            cols = [c.strip() for c in re.sub(r"^\[\d+\]:?", "", line).split(",")]
            pending = ""
            context = command or text
            continue
        if not cols or "," not in line:
            continue
        if pending:   # a value line a document wrapped: join it back at its comma
            pending += line if pending.endswith(",") or line.startswith(",") else "," + line
        else:
            pending = line
        vals = [v.strip() for v in pending.split(",")]
        if len(vals) < len(cols):
            continue  # the value line was wrapped: wait for the rest
        pending = ""
        row = dict(zip(cols, vals))
        ms.extend(_measurements(row, cols, context, name, run))
    return done + [ImportedRun(run, ms)] if ms else done


def _measurements(row: dict[str, str], cols: list[str], text: str, name: str, run: Run) -> list[Measurement]:
    gflops_key = next((c for c in cols if c.endswith("Gflops") and not c.startswith("CPU")), None)
    gbs_key = next((c for c in cols if c.endswith("-GB/s") and not c.startswith("CPU")), None)
    gflops = to_float(row.get(gflops_key, "")) if gflops_key else None
    us = to_float(row.get("us", ""))
    lower = {k.lower(): v for k, v in row.items()}
    function, inferred = _function(cols, text)
    params: dict[str, object] = {
        "m": to_int(lower.get("m", "")), "n": to_int(lower.get("n", "")), "k": to_int(lower.get("k", "")),
        "batch": to_int(lower.get("batch_count", "1")) or 1,
        "transA": lower.get("transa", ""), "transB": lower.get("transb", ""), "function": function,
    }
    # the row's own column first: it is what that problem ran with
    dtype = _TYPES.get(lower.get("a_type", lower.get("d_type", "")).lower())
    dtype = dtype or _dtype_from_command(text) or _dtype_from_name(name)
    if dtype:
        params["dtype"] = dtype
    if "compute_type" in lower:
        params["compute_type"] = lower["compute_type"]
    if inferred:
        params["function_inferred"] = True
    params = {k: v for k, v in params.items() if v not in (None, "")}
    out = []
    if gflops is not None:
        out.append(TFLOPS(BENCHMARK, gflops / 1000.0, params))
    if us is not None:
        out.append(TIME(BENCHMARK, us, params))
    gbs = to_float(row.get(gbs_key, "")) if gbs_key else None
    if gbs is not None:
        out.append(BANDWIDTH(BENCHMARK, gbs, params))
    _check_plausible(run, params, gflops, us)
    return out


def _check_plausible(run: Run, params: dict[str, object], gflops: float | None, us: float | None) -> None:
    """Warn about a rate no device could reach (see the module doc)."""
    m, n, k = params.get("m"), params.get("n"), params.get("k")
    implied = None
    if isinstance(m, int) and isinstance(n, int) and isinstance(k, int) and us:
        try:
            implied = 2.0 * m * n * k * int(params.get("batch", 1)) / (us * 1e-6) / 1e12   # TFLOP/s
        except OverflowError:   # sizes of hundreds of digits: a damaged row, no rate to judge
            implied = None
    rate = max(x for x in (gflops / 1000.0 if gflops is not None else None, implied) if x is not None) \
        if (gflops is not None or implied is not None) else None
    if rate is None:
        return
    dtype = str(params.get("dtype", ""))
    kinds = [dtype, "tf32"] if dtype == "fp32" else [dtype] if dtype else []
    device = next((d for d in run.devices if peaks.lookup(d)), None)
    if device:
        dev = peaks.lookup(device)
        assert dev is not None
        limit = max((dev.tflops[x] for x in kinds if x in dev.tflops), default=max(dev.tflops.values(), default=0))
        whose = f"the {dev.id}'s datasheet peak"
    else:
        limit = max((d.tflops.get(x, 0.0) for d in peaks.table() for x in (kinds or list(d.tflops))), default=0)
        whose = "the datasheet peak of every device clusterbench knows"
    if limit and rate > 1.5 * limit:
        shape = f"{m}x{n}x{k} {dtype}".strip()
        unit = TFLOPS.unit_for(params)
        add_warning(run, f"implausible GEMM figure: {shape} at {rate:.4g} {unit} ({us} us) is above {whose} "
                         f"({limit:g} {unit}{' for ' + dtype if dtype else ''}); the kernel probably did not run")


def _parser(tool: str) -> Parse:
    def run(lines: Iterable[str], name: str, head: str) -> Iterator[ImportedRun]:
        yield from parse(whole_text(lines), name, tool)
    return run


IMPORTERS = (
    Importer("hipblaslt-bench", re.compile(r"hipblaslt-Gflops|hipBLASLt version"), _parser("hipblaslt-bench"),
             order=70, starts=re.compile(r"^\s*hipBLASLt version|^\s*(?:\[\d+\]:?)?transA,transB,.*hipblaslt-Gflops",
                                         re.M)),
    Importer("rocblas-bench", re.compile(r"rocblas-Gflops"), _parser("rocblas-bench"), order=80,
             starts=re.compile(r"^\s*transA,transB,.*rocblas-Gflops", re.M)),
)
