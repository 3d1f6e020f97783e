"""OSU variants (ingest/osu.py) on real logs (tests/data/osu, sources in its README): programs
named as OSU ships them, one run per test in a file, buffers from the command line or a
script's banner, library warnings that change nothing."""

from pathlib import Path

import pytest

from clusterbench.ingest import parse_text
from clusterbench.ingest.osu import bench_name

DATA = Path(__file__).parent.parent / "data" / "osu"
MODES = "mi300a-affinity-rocm-DD-latency-bw-v7.5-3modes-annotated-rows.txt"


def runs(name: str):
    return parse_text((DATA / name).read_text(), name=name)


# Each program's title, as osu-micro-benchmarks 7.4 defines it (c/mpi/*/*.c, BENCHMARK; the
# %s after MPI is the build's variant, -CUDA or -ROCM)
TITLES = {
    "osu_alltoall": "All-to-All Personalized Exchange Latency", "osu_alltoallv": "All-to-Allv Personalized Exchange Latency",
    "osu_alltoallw": "All-to-Allw Personalized Exchange Latency", "osu_allgather": "Allgather Latency",
    "osu_allreduce": "Allreduce Latency", "osu_bcast": "Broadcast Latency", "osu_reduce_scatter": "Reduce_scatter Latency",
    "osu_reduce_scatter_block": "Reduce_scatter_block Latency", "osu_scatterv": "Scatterv Latency",
    "osu_ialltoall": "Non-blocking All-to-All Latency", "osu_ibcast": "Non-Blocking Broadcast Latency",
    "osu_ialltoallv": "Non-blocking All-to-Allv Personalized Exchange Latency",
    "osu_ineighbor_allgather": "Non-blocking Neighborhood Allgather Latency",
    "osu_neighbor_alltoallv": "Neighborhood All-to-Allv Latency", "osu_neighbor_alltoall": "Neighborhood Alltoall Latency",
    "osu_alltoall_persistent": "All-to-All Personalized Exchange Persistent Latency",
    "osu_allgather_persistent": "Allgather Persistent Latency", "osu_bibw_persistent": "Bi-Directional Bandwidth Persistent",
    "osu_latency_persistent": "Latency Persistent", "osu_bibw": "Bi-Directional Bandwidth", "osu_bw": "Bandwidth",
    "osu_latency_mt": "Multi-threaded Latency", "osu_mbw_mr": "Multiple Bandwidth / Message Rate",
}


@pytest.mark.parametrize("program", sorted(TITLES))
def test_each_title_names_its_program(program):
    assert bench_name("MPI", TITLES[program]) == program
    assert bench_name("MPI-CUDA", TITLES[program]) == program


@pytest.mark.parametrize("name", ["cscs-osu_alltoall-validation-8ranks-v7.5.txt",
                                  "yoltla-es-osu_alltoall-f-noversion-1node-indent-stripped.txt"])
def test_all_to_all_personalized_exchange_is_osu_alltoall(name):
    (r,) = runs(name)
    assert r.benchmarks() == ["osu_alltoall"] and r.run.status == "complete"


def test_alltoall_values_with_validation_and_library_warnings():
    (r,) = runs("cscs-osu_alltoall-validation-8ranks-v7.5.txt")
    lat = {m.params["bytes"]: m.value for m in r.measurements}
    assert len(lat) == 21 and lat[1048576] == 519.85 and lat[1] == 12.46
    # the loader's libnl lines name the program ('.../osu_alltoall: ...'): not a command line
    assert r.run.meta["log_command"].startswith("srun -N2 --ntasks-per-node=4")


def test_three_modes_of_latency_and_bandwidth_are_six_runs():
    # three '=== Affinity mode ===' sections of '--- osu_latency (D D) ---' and '--- osu_bw (D D,
    # up to 4 MiB) ---' banners; only the first section prints OSU's titles
    found = runs(MODES)
    assert [r.benchmarks()[0] for r in found] == ["osu_latency", "osu_bw"] * 3
    assert [len(r.measurements) for r in found] == [9, 6] * 3
    assert all(m.params["buffers"] == "D D" for r in found for m in r.measurements)
    assert [r.run.source for r in found] == ["osu 7.5", "osu 7.5", "osu", "osu", "osu", "osu"]
    assert {r.run.status for r in found} == {"complete"}
    lat, bw = found[0], found[1]
    # rows annotated after their value ('8.43   <- UCX protocol switch ...')
    assert {m.params["bytes"]: m.value for m in lat.measurements}[512] == 8.43
    assert {m.params["bytes"]: m.value for m in bw.measurements}[4194304] == pytest.approx(432.60271)
    assert {m.params["bytes"]: m.value for m in found[4].measurements}[4194304] == 79.64
    assert {m.params["bytes"]: m.value for m in found[5].measurements}[4194304] == pytest.approx(53.30789)


def test_bibw_device_buffers_from_its_command_line():
    # 'osu_bibw --validation D D' three lines above the title, libnl warnings between
    (r,) = runs("cscs-osu_bibw-cuda-DD-validation-v7.5.txt")
    assert r.benchmarks() == ["osu_bibw"] and len(r.measurements) == 23
    assert {m.params["buffers"] for m in r.measurements} == {"D D"}
    assert {m.params["bytes"]: m.value for m in r.measurements}[4194304] == pytest.approx(46.41753)


def test_a_warning_never_changes_the_status():
    text = (DATA / "cscs-osu_bibw-cuda-DD-validation-v7.5.txt").read_text()
    lines = text.splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if ln.startswith("1024 "))
    lines.insert(at, "libfabric:1234:cxi:core:cxip_ep_enable():1100<warn> connection timed out, retrying\n")
    (r,) = parse_text("".join(lines), name="bibw.txt")
    assert r.run.status == "complete" and any("timed out" in w for w in r.run.meta["warnings"])
    lines[at] = "srun: error: nid001: task 1: Terminated\n"
    (r,) = parse_text("".join(lines), name="bibw.txt")
    assert r.run.status == "incomplete"   # the launcher's own failure is one
