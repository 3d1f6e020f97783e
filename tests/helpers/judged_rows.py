"""Rows and runs of busbw (and stream times) for the judging tests: compare, baseline, trend,
outliers, degraded nodes, noise."""

from __future__ import annotations

from clusterbench.families.base import iteration_stats
from clusterbench.judge.profiles import Criterion
from clusterbench.judge.select import Row
from clusterbench.records import Measurement, Run
from clusterbench.store import Store

ROW = {"bytes": 1 << 30, "dtype": "float", "redop": "sum", "placement": "out", "ranks": 8}


def _busbw_run(store: Store, value: float, tags: dict[str, str], status: str = "complete") -> int:
    run = Run(benchmark="coll", hosts=["h1"], ranks=8, tags=tags, status=status)
    return store.save_run(run, [Measurement("all_reduce", "busbw", value, "GB/s", ROW)])


PARAMS = {"bytes": 1 << 30, "count": 1 << 28, "dtype": "float", "redop": "sum", "root": -1,
          "placement": "in", "ranks": 16}


def _busbw(value: float) -> list[Measurement]:
    return [Measurement("all_reduce", "busbw", value, "GB/s", dict(PARAMS))]


UNITS_PARAMS = {"bytes": 1 << 20}


def _unit_row(run_id: int, value: float, unit: str) -> Row:
    """One all_reduce busbw row of 1 MiB in ``unit``: the rows that units are judged on."""
    return Row(Run("coll", id=run_id), Measurement("all_reduce", "busbw", value, unit, dict(UNITS_PARAMS)))


def _criterion(value: float = 1.0) -> Criterion:
    """busbw >= ``value`` GB/s at 1 MiB: what _unit_row's rows are judged against."""
    return Criterion(name="busbw", benchmark="all_reduce", metric="busbw", params=dict(UNITS_PARAMS),
                     op=">=", value=value, unit="GB/s")


def rows_judge_compare(values, bytes_=1 << 30, metric="busbw", unit="GB/s", start=1):
    out = []
    for i, v in enumerate(values):
        run = Run("coll", id=start + i)
        out.append(Row(run, Measurement("all_reduce", metric, v, unit,
                                        {"bytes": bytes_, "placement": "in", "host": f"h{i}"})))
    return out


def _stream_rows(kernel: str, times_us: list[float]) -> list[Measurement]:
    base = {"kernel": kernel, "array_size": 1 << 20, "dtype": "double", "device": "cuda:0"}
    out = [Measurement("stream", "bandwidth", 100.0, "GB/s", dict(base))]
    out += [Measurement("stream", "time_us", v, "us", {**base, "stat": s})
            for s, v in iteration_stats(times_us).items()]
    return out


def _row(value: float, run_id: int, unit: str = "GB/s", metric: str = "busbw", **params: object) -> Row:
    return Row(Run("coll", id=run_id, hosts=["n1", "n2"]),
               Measurement("all_reduce", metric, value, unit, {**PARAMS, **params}))


def _rows(values: list[float], start: int, unit: str = "GB/s") -> list[Row]:
    return [_row(v, start + i, unit) for i, v in enumerate(values)]
