"""nccl-tests ``-J`` JSON and rccl-tests ``-Z csv|json`` result files.

No such file from a real run was found in public sources, so these tests write the real seed
table (tests/data/nccl-tests/seed-mi300x-rccl-all_reduce-8gpu.txt) in each format exactly as the
tools' writers lay it out (nccl-tests src/util.cu, rccl-tests src/common.cu Reporter) and check
that the importer returns the same records as for the text log.
"""

import json

import pytest
from ingest_helpers import SEED, nccl_json, table_rows

from clusterbench.ingest import LogFormatError, detect_tool, parse_text


@pytest.fixture(scope="module")
def text_run():
    return parse_text(SEED.read_text(), name=SEED.name)[0]


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


def rccltable_rows(text_run):
    for (size, _count), places in table_rows(text_run).items():
        for inplace, p in ((0, places["out"]), (1, places["in"])):
            yield size, inplace, p


def test_rccl_csv_equals_text(text_run):
    lines = ["numCycle,collective,nodes,ranks,ranksPerNode,gpusPerRank,size,type,redop,inplace,time,algbw,busbw,#wrong"]
    for size, inplace, p in rccltable_rows(text_run):
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
            for size, inplace, p in rccltable_rows(text_run)]
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
            for size, inplace, p in rccltable_rows(text_run)]
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
