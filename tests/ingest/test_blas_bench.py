"""Tests of clusterbench.ingest.blas_bench."""

import pytest
from ingest_helpers import load, pick
from paths import DATA
from tool_log_texts import text_tool_logs

from clusterbench.ingest import parse_text


@pytest.mark.parametrize("name,dtype,function,tflops,m,batch", [
    ("seed-mi300x-sgemm-4000.txt", "fp32", "gemm", 97.1906, 4000, 1),
    ("seed-mi300x-gemm_strided_batched_ex-bf16.txt", "bf16", "gemm_strided_batched_ex", 159.783, 1024, 5),
    ("seed-mi300x-gemm_strided_batched_ex-int8.txt", "int8", "gemm_strided_batched_ex", 177.478, 1024, 5),
    ("superbench-test-fp64.txt", "fp64", "gemm", 10.0375, 7680, 1),
    ("superbench-test-fp16_x.txt", "fp16", "gemm_ex", 153.728, 7680, 1),
    ("sysaccept-mi300x-gemm_strided_batched_ex-int8.txt", "int8", "gemm_strided_batched_ex", 177.478, 1024, 5),
])
def test_rocblas_bench_lines(name, dtype, function, tflops, m, batch):
    r = load("rocblas-bench", name)
    t = pick(r.measurements, "tflops")
    # an int8 GEMM counts integer operations: TOP/s
    assert t.value == pytest.approx(tflops) and t.unit == ("TOP/s" if dtype == "int8" else "TFLOP/s")
    assert (t.params["dtype"], t.params["function"], t.params["m"], t.params["batch"]) == (dtype, function, m, batch)
    assert t.params["transA"] in ("N", "T") and "time_us" in {x.metric for x in r.measurements}


def test_rocblas_seed_time_and_transpose():
    ms = load("rocblas-bench", "seed-mi300x-sgemm-4000.txt").measurements
    assert pick(ms, "time_us").value == 1317.0
    assert pick(ms, "tflops").params | {} == {"m": 4000, "n": 4000, "k": 4000, "batch": 1, "transA": "N", "transB": "T",
                                              "function": "gemm", "function_inferred": True, "dtype": "fp32"}


def test_rocblas_dtype_from_command_line_beats_file_name():
    text = ("rocblas-bench -f gemm_ex -m 64 -n 64 -k 64 --a_type h --b_type h --c_type s\n"
            + (DATA / "rocblas-bench" / "superbench-test-fp32_x.txt").read_text())
    t = pick(parse_text(text, name="fp32.txt")[0].measurements, "tflops")
    assert t.params["dtype"] == "fp16" and t.params["function"] == "gemm_ex" and "function_inferred" not in t.params


def test_hipblaslt_bench():
    r = load("hipblaslt-bench", "superbench-test-fp16-896.txt")
    t = pick(r.measurements, "tflops")
    assert t.value == pytest.approx(58.6245)
    assert t.params["dtype"] == "fp16" and t.params["function"] == "matmul" and t.params["compute_type"] == "f32_r"
    assert r.run.source == "hipblaslt-bench 600" and r.run.devices[0].startswith("AMD Radeon Graphics gfx942")
    assert pick(r.measurements, "time_us").value == 24.54


def test_hipblaslt_bench_fp8_new_header():
    r = load("hipblaslt-bench", "gfx950-fp8-4096x65536x14336-doc-example.txt")
    t = pick(r.measurements, "tflops")
    assert t.value == pytest.approx(3273.3)  # 3.2733e+06 GFLOPS
    assert (t.params["m"], t.params["n"], t.params["k"], t.params["transA"]) == (4096, 65536, 14336, "T")
    assert t.params["dtype"] == "fp8_e4m3" and r.run.source == "hipblaslt-bench 100100"
    assert pick(r.measurements, "time_us").value == 2351.32


# -- hipBLASLt / rocBLAS columns by name, GB/s kept, implausible figures warned -----------------
@pytest.mark.parametrize("name, gflops, gbs, us", [
    ("mi350x-v100200-bf16-7168x4096x18432-gbs-print-kernel-info.txt", 1.19301e+06, 486.546, 907.225),
    ("doc-bench-freq-lowest-avg-freq-columns.txt", 192.399, 22.442, 10.9),      # freq columns first
    ("doc-bench-freq-all-per-xcd-columns.txt", 148.734, 17.3488, 14.1),
    ("pr1544-bench-eff-efficiency-column-between-gflops-and-gbs.txt", 555009, 248.176, 2361.71),
    ("doc-v-validation-cpu-gflops-norm-error.txt", 403.298, 17.6063, 10.4),     # CPU-Gflops/CPU-us after
])
def test_hipblaslt_columns_by_name_and_gbs_kept(name, gflops, gbs, us):
    r = load("hipblaslt-bench", name)
    assert pick(r.measurements, "tflops").value == pytest.approx(gflops / 1000)
    bw = pick(r.measurements, "bandwidth")
    assert bw.value == pytest.approx(gbs) and bw.unit == "GB/s"
    assert pick(r.measurements, "time_us").value == pytest.approx(us)
    assert not r.run.meta.get("warnings")


def test_hipblaslt_2023_header_without_gbs():
    r = load("hipblaslt-bench", "doc-2023-old-header-uppercase-MNK-no-index-spaced-values.txt")
    t = pick(r.measurements, "tflops")
    assert t.value == pytest.approx(0.415278) and (t.params["m"], t.params["dtype"]) == (128, "fp32")
    assert pick(r.measurements, "time_us").value == 10.1 and not [m for m in r.measurements if m.metric == "bandwidth"]


def test_a_gemm_no_device_could_run_is_stored_with_a_warning():
    r = load("hipblaslt-bench", "issue251-2023-gfx906-unsupported-warning-bogus-gflops-v1.txt")
    assert pick(r.measurements, "tflops").value == pytest.approx(2727.63)   # stored as printed ...
    warnings = r.run.meta["warnings"]                                       # ... and flagged
    assert warnings[0].startswith("rocblaslt warning: No paths matched")
    assert warnings[1].startswith("implausible GEMM figure: 2048x2048x2048 fp32 at 2728 TFLOP/s (6.3 us) is above "
                                  "the datasheet peak of every device clusterbench knows (653.7 TFLOP/s for fp32)")


def test_microseconds_for_a_large_gemm_on_a_known_device_are_flagged():
    text = (DATA / "rocblas-bench" / "seed-mi300x-sgemm-4000.txt").read_text().replace(" 1317", " 13.17")
    (r,) = parse_text("Device ID 0 : AMD Instinct MI300X\n" + text, name="sgemm.txt")
    assert "is above the MI300X's datasheet peak (653.7 TFLOP/s for fp32)" in r.run.meta["warnings"][0]


@pytest.mark.parametrize("name, gflops, us", [
    ("rocblas-docs-vega20-sgemm-old-header-no-gbs-rst-indented.txt", 11941.5, 11509.4),   # ldb before beta
    ("rx6750xt-windows-rocm-v5.7-cold-hot-iters-spaced-values.txt", 25977.3, 5290.73),   # ', 2, 10, 25977.3'
])
def test_rocblas_old_and_spaced_forms(name, gflops, us):
    r = load("rocblas-bench", name)
    t = pick(r.measurements, "tflops")
    assert t.value == pytest.approx(gflops / 1000) and pick(r.measurements, "time_us").value == us
    assert (t.params["m"], t.params["n"], t.params["k"]) == (4096, 4096, 4096)
    assert not r.run.meta.get("warnings")


def test_rocblas_type_not_printed_is_not_guessed():
    r = load("rocblas-bench", "rx6750xt-windows-rocm-v5.7-cold-hot-iters-spaced-values.txt")
    assert "dtype" not in pick(r.measurements, "tflops").params and r.run.source == "rocblas-bench 5.7.0.67811f1ee52"


def test_each_rocblas_table_takes_the_function_and_type_of_the_command_before_it():
    """A script's log of two rocblas-bench commands, each printed before its output (as `set -x`
    shows them): the real superbench fp64 table and the real seed bf16 strided-batched table. Every
    row took the first -f and the first --a_type of the whole log (the fp64 rows were stored as
    bf16); now each table takes the command before it, and each command is a run of its own
    (one run per invocation: a second command after results starts the next)."""
    fp64 = (DATA / "rocblas-bench" / "superbench-test-fp64.txt").read_text()
    bf16 = (DATA / "rocblas-bench" / "seed-mi300x-gemm_strided_batched_ex-bf16.txt").read_text()
    bf16 = bf16.replace(":mark:`", "").replace("`", "")
    text = ("+ ./rocblas-bench -f gemm -r f64_r --transposeA N --transposeB T -m 7680 -n 8192 -k 8192\n" + fp64
            + "\n+ ./rocblas-bench -f gemm_strided_batched_ex --transposeA N --transposeB T -m 1024 -n 2048 -k 512"
              " --a_type bf16_r --b_type bf16_r --c_type bf16_r --d_type bf16_r --compute_type f32_r\n" + bf16)
    first, second = parse_text(text, "rocblas-bench", "two-commands.log")
    got = [{(m.params["m"], m.params["function"], m.params.get("dtype")) for m in r.measurements}
           for r in (first, second)]
    assert got == [{(7680, "gemm", "fp64")}, {(1024, "gemm_strided_batched_ex", "bf16")}]


def test_hipblaslt_short_log_behind_pdsh_host_prefix_keeps_every_column():
    log = text_tool_logs("hipblaslt-bench", "doc-v-validation-cpu-gflops-norm-error.txt")
    plain = parse_text(log)
    prefixed = parse_text("".join(f"node1: {ln}\n" for ln in log.split("\n")))
    assert [(m.metric, m.value, m.params) for m in prefixed[0].measurements] == \
        [(m.metric, m.value, m.params) for m in plain[0].measurements]
    assert prefixed[0].measurements[0].params["transA"] == "N"
