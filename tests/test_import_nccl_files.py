"""nccl-tests ``-J`` JSON and rccl-tests ``-Z csv|json`` result files.

No such file from a real run was found in public sources, so these tests write the real seed
table (tests/data/nccl-tests/seed-mi300x-rccl-all_reduce-8gpu.txt) in each format exactly as the
tools' writers lay it out (nccl-tests src/util.cu, rccl-tests src/common.cu Reporter) and check
that the importer returns the same records as for the text log.
"""

import json
from pathlib import Path

import pytest

from clusterbench.ingest import LogFormatError, detect_tool, parse_text

SEED = Path(__file__).parent / "data" / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt"


@pytest.fixture(scope="module")
def text_run():
    return parse_text(SEED.read_text(), name=SEED.name)[0]


def _rows(text_run):
    rows = {}
    for m in text_run.measurements:
        if m.metric in ("time_us", "algbw", "busbw", "wrong"):
            key = (m.params["bytes"], m.params["count"])
            rows.setdefault(key, {}).setdefault(m.params["placement"], {})[m.metric] = m.value
    return rows


def nccl_json(text_run, *, finished=True) -> str:
    """The layout of nccl-tests' -J writer (JSON_FILE_VERSION 2): root is a padded string,
    okay flags are the strings "true"/"false", doubles are printed with %lf."""
    run = text_run.run
    devices = ",".join(
        f'{{"rank":{i},"group":0,"pid":806883,"hostname":"{run.meta["rank_hosts"][i]}","device":{i},'
        f'"device_hex":"{run.meta["rank_bus_id"][i]}","device_info":"{run.devices[i]}"}}' for i in range(run.ranks))
    results = []
    for (size, count), places in _rows(text_run).items():
        blocks = ",".join(f'"{key}":{{"time":{p["time_us"]:f},"alg_bw":{p["algbw"]:f},"bus_bw":{p["busbw"]:f},'
                          f'"nwrong":{p["wrong"]:f}}}' for key, p in (("out_of_place", places["out"]),
                                                                          ("in_place", places["in"])))
        results.append(f'{{"size":{size},"count":{count},"type":"float","redop":"sum","root":"    -1",{blocks},'
                       f'"actual_iterations":20,"experiment_name":"all_reduce"}}')
    head = (f'{{"version":2,"start_time":"2025-01-01 00:00:00","args":["./build/all_reduce_perf","-b","8","-e","8G",'
            f'"-f","2","-g","8","-J","out.json"],"env":["PATH=\\/usr\\/bin"],"nccl_version":22005,'
            f'"config":{{"nthreads":1,"ngpus":8,"minimum_bytes":8,"maximum_bytes":8589934592,"step_factor":2,'
            f'"devices":[{devices}]}},"results":[')
    if not finished:  # the writer died after some rows: nothing is closed
        return head + ",".join(results[:10]) + ","
    return (head + ",".join(results) + '],"out_of_bounds":{"count":0,"okay":"true"},'
            '"average_bus_bandwidth":{"bandwidth":102.138000,"okay":"unchecked"},"errors":[],'
            '"end_time":"2025-01-01 00:01:00"}')


def test_nccl_json_equals_text(text_run):
    doc = nccl_json(text_run)
    json.loads(doc)  # the writer's output is valid JSON
    assert detect_tool(doc) == "nccl-tests"
    r = parse_text(doc, name="out.json")[0]
    assert r.run.status == "complete" and r.run.ranks == 8 and r.run.versions["nccl"] == "2.20.5"
    assert r.run.hosts == ["SMC-SC-DC19-06"] and r.run.meta["op"] == "all_reduce"
    key = lambda m: (m.metric, m.params.get("bytes"), m.params.get("placement"))  # noqa: E731
    got = {key(m): (m.value, m.params) for m in r.measurements}
    want = {key(m): (m.value, m.params) for m in text_run.measurements}
    assert got == want


def test_nccl_json_cut_short_is_incomplete(text_run):
    r = parse_text(nccl_json(text_run, finished=False), name="out.json")[0]
    assert r.run.status == "incomplete"
    assert len([m for m in r.measurements if m.metric == "busbw"]) == 20
    assert not [m for m in r.measurements if m.metric == "avg_busbw"]


def rccl_rows(text_run):
    for (size, _count), places in _rows(text_run).items():
        for inplace, p in ((0, places["out"]), (1, places["in"])):
            yield size, inplace, p


def test_rccl_csv_equals_text(text_run):
    lines = ["numCycle,collective,nodes,ranks,ranksPerNode,gpusPerRank,size,type,redop,inplace,time,algbw,busbw,#wrong"]
    for size, inplace, p in rccl_rows(text_run):
        lines.append(f"0,AllReduce,1,8,8,1,{size},float,sum,{inplace},{p['time_us']},{p['algbw']},{p['busbw']},0")
    csv = "\n".join(lines) + "\n"
    assert detect_tool(csv) == "nccl-tests"
    r = parse_text(csv, name="rccl.csv")[0]
    assert r.run.meta["op"] == "all_reduce" and r.run.ranks == 8 and r.run.source == "rccl-tests"
    got = sorted((m.metric, m.params["bytes"], m.params["count"], m.params["placement"], m.value)
                 for m in r.measurements)
    want = sorted((m.metric, m.params["bytes"], m.params["count"], m.params["placement"], m.value)
                  for m in text_run.measurements
                  if m.metric in ("time_us", "algbw", "busbw", "wrong"))
    assert got == want


def test_rccl_json_with_unquoted_strings(text_run):
    # the Reporter writes "key":value with string values unquoted, one object per line
    objs = [f'{{"numCycle":0, "name":AllReduce, "gpus":8, "size":{size}, "type":float, "redop":sum, '
            f'"inPlace":{inplace}, "time":{p["time_us"]}, "algBw":{p["algbw"]}, "busBw":{p["busbw"]}, "wrong":N/A}}'
            for size, inplace, p in rccl_rows(text_run)]
    doc = "[\n" + ",\n".join(objs) + "\n]\n"
    r = parse_text(doc, name="rccl.json")[0]
    assert r.run.meta["op"] == "all_reduce" and r.run.ranks == 8
    assert not [m for m in r.measurements if m.metric == "wrong"]  # N/A
    busbw = [m for m in r.measurements if m.metric == "busbw" and m.params["bytes"] == 8589934592]
    assert sorted(m.value for m in busbw) == [315.84, 316.55]


@pytest.mark.parametrize("brackets", [True, False], ids=["array", "object-lines"])
def test_rccl_json_quoted_as_the_current_reporter_writes_it(text_run, brackets):
    # rocm-systems projects/rccl-tests src/common.cu: makeValueKeyPair quotes std::string values,
    # std::to_string prints 6 decimals; an MPI build adds nodes/ranks/ranksPerNode/gpusPerRank
    objs = [f'{{"numCycle":0, "name":"AllReduce", "nodes":1, "ranks":8, "ranksPerNode":8, "gpusPerRank":1, '
            f'"size":{size}, "type":"float", "redop":"sum", "inPlace":{inplace}, "time":{p["time_us"]:.6f}, '
            f'"algBw":{p["algbw"]:.6f}, "busBw":{p["busbw"]:.6f}, "wrong":"0"}}'
            for size, inplace, p in rccl_rows(text_run)]
    doc = ("[\n" + ",\n".join(objs) + "\n]\n") if brackets else "\n".join(objs) + "\n"
    if brackets:
        json.loads(doc)   # the current writer's output is valid JSON
    assert detect_tool(doc) == "nccl-tests"
    r = parse_text(doc, name="rccl.json")[0]
    assert r.run.meta["op"] == "all_reduce" and r.run.ranks == 8 and r.run.meta["nodes"] == 1
    got = sorted((m.metric, m.params["bytes"], m.params["count"], m.params["placement"], m.value)
                 for m in r.measurements)
    want = sorted((m.metric, m.params["bytes"], m.params["count"], m.params["placement"], m.value)
                  for m in text_run.measurements if m.metric in ("time_us", "algbw", "busbw", "wrong"))
    assert got == want


def test_json_that_cannot_be_recovered_is_an_error():
    with pytest.raises(LogFormatError):
        parse_text('{"nccl_version": 1, "results": [ {"size": ', tool="nccl-tests")
