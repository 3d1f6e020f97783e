"""Rows, runs and headers for the families' table printers (nccl-tests style and stream)."""

from __future__ import annotations

from clusterbench.records import Header, Measurement, Run


def _row(op, nbytes, count, placement, t, alg, bus, wrong=None, dtype="float", redop="sum", root=-1):
    p = {"bytes": nbytes, "count": count, "dtype": dtype, "redop": redop, "root": root,
         "placement": placement, "ranks": 4}
    ms = [Measurement(op, "time_us", t, "us", p), Measurement(op, "algbw", alg, "GB/s", p),
          Measurement(op, "busbw", bus, "GB/s", p)]
    if wrong is not None:
        ms.append(Measurement(op, "wrong", float(wrong), "", p))
    return ms


def _run():
    return Run(benchmark="coll", ranks=2, hosts=["nodeA"], devices=["GPU A", "GPU B"],
               meta={"rank_hosts": ["nodeA", "nodeA"], "rank_pids": [101, 102],
                     "rank_device_index": [0, 1], "rank_bus_id": ["0x1b", "0x2c"],
                     "coll_sweep.all_gather": {"minbytes": 8, "maxbytes": 1024, "step": 2,
                                               "step_kind": "factor", "warmup_iters": 5, "iters": 20,
                                               "validation": 1}})


def _stream_rows(device="cuda:0"):
    base = {"kernel": "Triad", "array_size": 2**25, "dtype": "double", "device": device}
    return [Measurement("stream", "bandwidth", 2680.0, "GB/s", base),
            Measurement("stream", "time_us", 300.0, "us", {**base, "stat": "min"})]


def _header() -> Header:
    return Header(ranks=2, hosts=["a", "b"], devices=["cpu", "cpu"], device_type="cpu", backend="gloo",
                  launcher="local", versions={"torch": "x"}, env={"NCCL_DEBUG": "INFO"})


def _coll(op: str, size: int) -> list[Measurement]:
    p = {"bytes": size, "count": size // 4, "dtype": "float", "redop": "none", "root": -1,
         "placement": "out", "ranks": 2}
    return [Measurement(op, "time_us", 10.0, "us", p), Measurement(op, "algbw", 1.0, "GB/s", p),
            Measurement(op, "busbw", 1.0, "GB/s", p)]


def _index(lines: list[str], text: str) -> int:
    return next(i for i, line in enumerate(lines) if text in line)
