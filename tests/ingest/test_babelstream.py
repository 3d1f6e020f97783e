"""Tests of clusterbench.ingest.babelstream."""

import pytest
from ingest_helpers import load, pick
from paths import DATA
from tool_log_texts import (
    DATA_import_stream_forms,
    runs_import_stream_forms,
    text_tool_logs,
    values,
)

from clusterbench.ingest import detect_tool, parse_text

K20M = (DATA_import_stream_forms / "hpcbench-v3.3-cuda-k20m-csv-trailing-comma.txt").read_text()


@pytest.mark.parametrize("name", ["seed-mi300x-hip-8gpu-mpi.txt", "sysaccept-mi300x-hip-8gpu-mpi-truncated.txt"])
def test_babelstream_eight_processes_in_one_log(name):
    r = load("babelstream", name)
    ms = r.measurements
    assert r.run.source == "babelstream 5.0" and r.run.meta["implementation"] == "HIP"
    assert r.run.devices == ["AMD Instinct MI300X", "AMD Instinct MI300X"]  # two tables are shown
    copy0 = pick(ms, "bandwidth", kernel="Copy", device="0")
    assert copy0.value == pytest.approx(4255.995148) and copy0.unit == "GB/s"
    assert copy0.params == {"kernel": "Copy", "dtype": "double", "device": "0", "array_size": 268435456}
    assert pick(ms, "bandwidth", kernel="Dot", device="1").value == pytest.approx(3927.179117)
    assert pick(ms, "time_us", kernel="Add", device="1", stat="max").value == pytest.approx(1770.0)
    # a document's '. . .': the tables shown are whole, and a warning says others may be missing
    assert r.run.status == "complete" and r.run.meta["elided"] and "'. . .'" in r.run.meta["warnings"][0]


def test_babelstream_versions_and_models():
    r = load("babelstream", "repo-results-v3.3-titanxp-cuda.txt")
    assert r.run.devices == ["TITAN Xp"] and r.run.meta["implementation"] == "CUDA"
    assert pick(r.measurements, "bandwidth", kernel="Triad").value == pytest.approx(436.491299)
    assert pick(r.measurements, "bandwidth", kernel="Triad").params["array_size"] == 33554432
    r = load("babelstream", "repo-results-v2.0-broadwell-omp-cray.txt")  # GPU-STREAM 2.0 on a CPU, no Dot
    assert {m.params["kernel"] for m in r.measurements} == {"Copy", "Mul", "Add", "Triad"}
    assert pick(r.measurements, "time_us", kernel="Copy", stat="avg").value == pytest.approx(6110.0)


def test_babelstream_csv():
    r = load("babelstream", "superbench-hip-stream-csv.log")
    copy = pick(r.measurements, "bandwidth", kernel="Copy")
    assert copy.value == pytest.approx(1345.22) and copy.params["array_size"] == 268435456
    assert copy.params["dtype"] == "double" and r.run.devices == ["BW150"]
    assert pick(r.measurements, "time_us", kernel="Dot", stat="min").value == pytest.approx(3378.69)
    assert not [m for m in r.measurements if m.params["kernel"] in ("Init", "Read")]


@pytest.mark.parametrize("name,array,copy_gbs,copy_min_s", [
    ("superbench-streamResultZen.log", 400000000, 342.0083, 0.018713),
    ("superbench-streamResultNeo.log", 120000000, 108.1805, 0.017748),
    ("babelstream-repo-results-v2.0-broadwell-mccalpin-cray.txt", 33554432, 92.9804, 0.005774),
])
def test_mccalpin_stream(name, array, copy_gbs, copy_min_s):
    text = (DATA / "stream" / name).read_text()
    assert detect_tool(text) == "babelstream"  # the same importer reads both
    r = parse_text(text, name=name)[0]
    assert r.run.source == "stream 5.10" and r.run.meta["tool"] == "stream"
    assert {m.params["kernel"] for m in r.measurements} == {"Copy", "Scale", "Add", "Triad"}
    copy = pick(r.measurements, "bandwidth", kernel="Copy")
    assert copy.value == pytest.approx(copy_gbs) and copy.params["array_size"] == array
    # STREAM's columns are Best Rate, Avg, Min, Max (BabelStream's: rate, Min, Max, Average)
    assert pick(r.measurements, "time_us", kernel="Copy", stat="min").value == pytest.approx(copy_min_s * 1e6)


@pytest.mark.parametrize("name, errors", [
    ("kaanolgu-v4.0-openacc-v100-validation-failed.txt",
     ["Validation failed on a[]. Average error 0.00168703", "Validation failed on b[]. Average error 0.00070293",
      "Validation failed on c[]. Average error 0.00246025"]),
    ("kaanolgu-v4.0-openacc-cpu-validation-failed.txt", None),
    ("vc4cl-issue82-ocl-float-validation-failed-sum.txt",
     ["Validation failed on sum. Error 75.5013", "Sum was 150.991104125977 but should be 226.492431640625"]),
])
def test_a_failed_validation_is_a_failed_run_with_the_message(name, errors):
    (r,) = runs_import_stream_forms(name)
    assert r.run.status == "failed"
    if errors:
        assert r.run.errors == errors
    assert len([m for m in r.measurements if m.metric == "bandwidth"]) == 5   # the table is kept


def test_validation_lines_alone_are_a_failed_run_without_records():
    (r,) = runs_import_stream_forms("babelstream-issue20-float-dot-validation-failed-fragment.txt")
    assert r.run.status == "failed" and r.measurements == [] and len(r.run.errors) == 2


def test_an_abort_before_the_table_is_a_failed_run():
    (r,) = runs_import_stream_forms("alpaka-issue1933-v4.0-abort-before-table.txt")
    assert r.run.status == "failed" and r.measurements == []
    assert r.run.errors[0] == "terminate called after throwing an instance of 'std::runtime_error'"
    assert r.run.errors[-1] == "Aborted"


def test_v3_3_csv_rows_with_a_trailing_comma():
    (r,) = runs_import_stream_forms("hpcbench-v3.3-cuda-k20m-csv-trailing-comma.txt")
    copy = pick(r.measurements, "bandwidth", kernel="Copy")
    assert copy.value == pytest.approx(152.212) and copy.params["array_size"] == 33554432
    assert pick(r.measurements, "time_us", kernel="Dot", stat="avg").value == pytest.approx(3736.52)
    assert r.run.devices == ["Tesla K20m"] and r.run.status == "complete"


# The rate column of each release's --csv header (BabelStream's main.cpp at the tag; FORMAT-NOTES),
# with the real rows of the K20m log (printed with --mibibytes where the header says MiB).
@pytest.mark.parametrize("rate_column, bytes_per_unit", [
    ("max_mbytes_per_sec", 1e6),      # v3.3 .. v5.0
    ("max_mibytes_per_sec", 2**20),   # v3.4 .. v5.0 with --mibibytes
    ("max_gbytes_per_sec", 1e9),      # develop 2024-03 (b858c4c): max_<unit.lower()>_per_sec
    ("max_gibytes_per_sec", 2**30),
    ("max_MB_per_sec", 1e6),          # v6.0-rc: max_<Unit::str()>_per_sec
    ("max_GB_per_sec", 1e9),
    ("max_MiB_per_sec", 2**20),
    ("max_GiB_per_sec", 2**30),
    ("max_TB_per_sec", 1e12),
    ("max_TiB_per_sec", 2**40),
])
@pytest.mark.parametrize("trailing_comma", [True, False], ids=["v3.3-rows", "v3.4-rows"])
def test_every_released_csv_header(rate_column, bytes_per_unit, trailing_comma):
    head = f"function,num_times,n_elements,sizeof,{rate_column},min_runtime,max_runtime,avg_runtime"
    lines = K20M.splitlines()
    body = [ln if trailing_comma else ln.rstrip(",") for ln in lines if ln.startswith(("Copy", "Mul", "Add",
                                                                                      "Triad", "Dot"))]
    (r,) = parse_text("\n".join(["Using CUDA device Tesla K20m", head, *body]) + "\n", name="stream.csv")
    assert pick(r.measurements, "bandwidth", kernel="Copy").value == pytest.approx(152212 * bytes_per_unit / 1e9)
    assert pick(r.measurements, "time_us", kernel="Copy", stat="min").value == pytest.approx(3527.13)


def test_v5_csv_phase_table_is_noted_not_stored():
    (r,) = parse_text((DATA_import_stream_forms / "superbench-hip-stream-csv.log").read_text(), name="x.log")
    assert {m.params["kernel"] for m in r.measurements} == {"Copy", "Mul", "Add", "Triad", "Dot"}
    assert any("Init phase not stored" in n for n in r.run.meta["notes"])


@pytest.mark.parametrize("unit, bytes_per_unit", [("MB/s", 1e6), ("GB/s", 1e9), ("MiB/s", 2**20),
                                                  ("GiB/s", 2**30), ("TB/s", 1e12)])
def test_v6_text_header_names_its_unit(unit, bytes_per_unit):
    text = (DATA_import_stream_forms / "kaanolgu-v4.0-openacc-v100-validation-failed.txt").read_text()
    text = text.replace("MBytes/sec  ", f"{unit:<12}")
    (r,) = parse_text(text, name="x.txt")
    assert pick(r.measurements, "bandwidth", kernel="Copy").value == pytest.approx(810043.502 * bytes_per_unit / 1e9)


def test_gpu_stream_runs_one_after_another_each_a_run():
    double, single = runs_import_stream_forms("rocm-issue1399-gpu-stream-v1.0-hip-add4-validation-failed-abort.txt")
    assert [double.run.status, single.run.status] == ["failed", "failed"]
    assert {m.params["dtype"] for m in double.measurements} == {"double"}
    assert {m.params["dtype"] for m in single.measurements} == {"float"}
    # GridSize 26214400 work-items: the array, exactly (its 'Array size: 200.0 MB' is in MiB)
    add4 = pick(double.measurements, "bandwidth", kernel="Add4")
    assert add4.value == pytest.approx(350.674259) and add4.params["array_size"] == 26214400
    assert double.run.meta["program"] == "GPU-STREAM"
    assert double.run.meta["notes"] == ["GEOMEAN row not stored (derived from the kernels' rows)"]
    assert any("double free or corruption" in e for e in double.run.errors)


def test_two_stream_tools_in_one_log_keep_both_tools_runs():
    found = runs_import_stream_forms("rocm-issue1399-hip-examples-gpu-stream-then-cuda-stream-gib.txt")
    assert [r.run.meta["tool"] for r in found] == ["babelstream"] * 4 + ["stream"]
    hip = found[-1]
    assert hip.run.status == "complete" and hip.run.meta["program"] == "STREAM Benchmark"
    # 'Rate (GiB/s)' in IEC units, columns Avg/Min/Max: 354.2486 GiB/s is 2 x 8 B x 2^26 / the min time
    copy = pick(hip.measurements, "bandwidth", kernel="Copy")
    assert copy.value == pytest.approx(354.2486 * 2**30 / 1e9)
    assert copy.value == pytest.approx(2 * 8 * 2**26 / 0.00282288 / 1e9, rel=1e-4)
    assert pick(hip.measurements, "time_us", kernel="Copy", stat="min").value == pytest.approx(2822.88)
    assert pick(hip.measurements, "time_us", kernel="Copy", stat="avg").value == pytest.approx(2948.10)
    assert {m.params["kernel"] for m in hip.measurements} == {"Copy", "Scale", "Add", "Triad"}


def test_babelstream_csv_row_cut_mid_line_is_not_stored():
    log = text_tool_logs("babelstream", "hpcbench-v3.3-cuda-k20m-csv-trailing-comma.txt")
    full = next(ln for ln in log.split("\n") if ln.startswith("Mul,"))
    (run,) = parse_text(log[:log.index(full)] + "Mul,100,33554432,8,152026,0.0")
    assert {m.params["kernel"] for m in run.measurements} == {"Copy"}
    assert values([run], "bandwidth") == [pytest.approx(152.212)]
    assert any("cut short" in w for w in run.run.meta["warnings"])
