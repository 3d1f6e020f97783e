"""Shared by the importer tests: real logs parsed, one record picked."""

from __future__ import annotations

from paths import DATA

from clusterbench.ingest import parse_text


def runs(tool, name):
    return parse_text((DATA / tool / name).read_text(), name=name)


def pick(ms, metric, **params):
    found = [m for m in ms if m.metric == metric and all(m.params.get(k) == v for k, v in params.items())]
    assert len(found) == 1, (metric, params, found)
    return found[0]


SEED = DATA / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt"


def table_rows(text_run):
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
    for (size, count), places in table_rows(text_run).items():
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
