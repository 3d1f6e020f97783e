"""Derive a validation profile from known-good runs: per row, a fraction of the median.

Each row (benchmark, metric, params minus host/rank/device) gets one value per run (the median of
that run's values, e.g. over its GPUs). Runs whose value is an outlier among the runs (modified
z-score, judge.outliers) are left out of that row and reported. The criterion is then
``>= pct% of the median`` for higher-is-better metrics and ``<= (200 - pct)% of the median`` for
times; every value of a validated run must meet it (aggregate all). Values are taken in the unit
of the row's first measurement (a run imported in MB/s beside runs in GB/s is converted).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from clusterbench.errors import UsageError
from clusterbench.families import family_of, higher_is_better
from clusterbench.judge.compare import GroupKeys, common_unit, group_rows, units_text
from clusterbench.judge.hardware import CPU, Hardware, measured_on_device
from clusterbench.judge.outliers import flag_outliers
from clusterbench.judge.profiles import Criterion, Profile
from clusterbench.judge.select import Row, params_match
from clusterbench.judge.stats import median, summarize
from clusterbench.records import COMPLETE, Measurement, Run
from clusterbench.store import Store
from clusterbench.store.runs import read_runs, with_measurements
from clusterbench.units import compact, format_size


@dataclass
class BaselineResult:
    profile: Profile
    left_out: list[dict] = field(default_factory=list)  # outlier runs per row
    noisy: list[dict] = field(default_factory=list)  # rows skipped because runs disagree
    not_positive: list[dict] = field(default_factory=list)  # rows skipped: median 0 or below


def known_good(db: str | os.PathLike[str] | None, selectors: Iterable[str], since: str | None = None
               ) -> tuple[list[tuple[Run, list[Measurement]]], list[Run]]:
    """The complete runs of those ``selectors`` pick, with their measurements, and the runs left
    out (failed, incomplete, interrupted): a failed run (wrong results, a failed check) or an
    incomplete one (a dead rank) is no evidence of what the cluster should reach. None complete
    is a UsageError."""
    selected = read_runs(db, selectors, since)
    good = [(r, ms) for r, ms in selected if r.status == COMPLETE]
    if not good:
        raise UsageError(f"none of run(s) {', '.join(str(r.id) for r, _ in selected)} is complete: "
                         "no known-good run to build a baseline from")
    return good, [r for r, _ in selected if r.status != COMPLETE]


@dataclass
class KnownGood:
    """``known_good``'s runs with only the records a baseline reads, and what it needs of the rest."""

    loaded: list[tuple[Run, list[Measurement]]]   # each complete run with its records of the metrics
    left_out: list[Run]                           # failed, incomplete, interrupted
    devices: list[tuple[Run, Any]]                # per complete run, each ``device`` param its records carry


def read_known_good(db: str | os.PathLike[str] | None, selectors: Iterable[str], since: str | None = None,
                    metrics: tuple[str, ...] = ()) -> KnownGood:
    """``known_good`` for ``create_baseline`` of ``metrics``: the complete runs with only their
    records of those metrics (each pack decoded into them as it is read: the other records of
    a thousand runs are never made), and the device labels of all their records, from which
    the profile's hardware is named (``create_baseline``'s ``devices``)."""
    with Store.open_to_read(db) as store:
        selected = store.select_all(selectors, since)
        good = [r for r in selected if r.status == COMPLETE]
        if not good:
            raise UsageError(f"none of run(s) {', '.join(str(r.id) for r in selected)} is complete: "
                             "no known-good run to build a baseline from")
        found = with_measurements(store, good, lambda b, m: _wanted(b, m, metrics), shared=True)
        labels = store.param_values_by_run([int(r.id or 0) for r in good], "device")
    return KnownGood(found, [r for r in selected if r.status != COMPLETE],
                     [(r, label) for r in good for label in labels[int(r.id or 0)]])


def _label(bench: str, metric: str, params: dict) -> str:
    shown = " ".join(f"{k}={v}" for k, v in params.items())
    return f"{bench} {metric}" + (f" {shown}" if shown else "")


def _wanted(benchmark: str, metric: str, metrics: tuple[str, ...]) -> bool:
    """The metrics asked for, else each family's headline (busbw, bandwidth, TFLOP/s, ...)."""
    if metrics:
        return metric in metrics
    family = family_of(benchmark)
    return family is not None and family.headline is not None and family.headline.name == metric


def create_baseline(rows: list[Row], *, name: str, pct: float = 90.0, metrics: tuple[str, ...] = (),
                    min_bytes: int = 1 << 20, max_cv: float = 0.10,
                    run_ids: Sequence[int] = (), devices: Iterable[tuple[Run, Any]] | None = None
                    ) -> BaselineResult:
    """``run_ids``: the runs selected, for the messages (a run without a row of its own is
    still one the user named); default: the runs the rows come from. ``devices``: (run, device
    label) of every record of the runs, where ``rows`` hold only the wanted metrics' records
    (``read_known_good``); default: the rows' own."""
    # above 100 the bound is stricter than the median: half the runs it came from would fail it
    if not 0 < pct <= 100:
        # repr: ``:g`` showed 100.0001 as "got 100", a value the check itself takes
        raise UsageError(f"--pct must be above 0 and at most 100, got {pct!r}")
    run_ids = sorted(set(run_ids) or {r.run.id for r in rows if r.run.id is not None})
    criteria: list[Criterion] = []
    result = BaselineResult(Profile(name, ()))
    # every row's params (spread records too), to see which rows a criterion's params would also
    # match: a profile's params are a subset match
    all_params: dict[tuple[str, str], list[dict]] = {}
    key_of = GroupKeys()
    for b, m, pj in {key_of(r) for r in rows}:
        all_params.setdefault((b, m), []).append(json.loads(pj))
    too_small = 0   # wanted rows left out by --min-bytes alone
    for (bench, metric, params_json), grp in group_rows(rows, key_of).items():
        if not _wanted(bench, metric, metrics):
            continue
        params = json.loads(params_json)
        if isinstance(params.get("bytes"), (int, float)) and params["bytes"] < min_bytes:
            too_small += 1
            continue  # small messages are latency-bound and too noisy for a pass/fail bound
        label = _label(bench, metric, params)
        converted = common_unit(grp)
        if converted is None:   # one bound cannot hold values in GB/s and us
            raise UsageError(f"runs {','.join(map(str, run_ids))} record {label} in {units_text(grp)}, which do "
                             "not convert into each other: no one bound (leave out the odd runs)")
        unit, converted_values = converted
        hib = higher_is_better(bench, metric, unit)
        per_run: dict[str, list[float]] = {}
        for r, value in zip(grp, converted_values, strict=True):
            per_run.setdefault(str(r.run.id), []).append(value)
        # judge.stats.median: statistics.median of two values near 1.7e308 overflows to inf, and
        # a bound of inf makes a profile validate refuses to load
        values = {k: median(v) for k, v in per_run.items()}
        for o in flag_outliers(values, higher_is_better=hib):
            result.left_out.append({"run": int(o.key), "row": label, "value": o.value,
                                    "median": o.median, "rel_dev": o.rel_dev, "z": o.z})
            del values[o.key]
        s = summarize(list(values.values()))
        if s.cv is not None and s.cv > max_cv:  # undefined (one run, mean 0): nothing to call noisy
            result.noisy.append({"row": label, "cv": s.cv, "runs": s.n})
            continue
        med = median(list(values.values()))
        if med <= 0:
            # no fraction of a median of 0 is a bound that means anything: said, not dropped unseen
            result.not_positive.append({"row": label, "median": med, "runs": len(values)})
            continue
        # A bidirectional pair's total (no ``leg``) would also match each leg, and a stricter bound
        # made from the total fail them: the params the other rows have besides these must be absent.
        absent = sorted({k for other in all_params[bench, metric] if other != params and params_match(params, other)
                         for k in other if k not in params})
        criteria.append(Criterion(
            name=label, benchmark=bench, metric=metric, params=params, absent=tuple(absent),
            source=f"baseline: median {med:.6g} {unit} of run(s) {','.join(sorted(values, key=int))}",
            op=">=" if hib else "<=", baseline=med, pct=pct if hib else 200 - pct, unit=unit,
        ))
    runs_text = ",".join(map(str, run_ids))
    if not criteria and result.noisy and not result.not_positive:
        raise UsageError(f"all {len(result.noisy)} candidate rows of runs {runs_text} vary by "
                         f"more than {compact(max_cv * 100, 0)}% CV between runs: no stable baseline (use more "
                         "repetitions or larger sizes)")
    if not criteria:
        what = "/".join(metrics) if metrics else "headline"
        if result.not_positive:   # they have rows: none with a median above 0 (the rest noisy)
            noisy = f"; {len(result.noisy)} vary too much between runs" if result.noisy else ""
            raise UsageError(f"{len(result.not_positive)} {what} row(s) of runs {runs_text} have a median of 0 or "
                             f"below{noisy}: no bound to write")
        if too_small:   # they have some: every one below the size floor
            raise UsageError(f"every {what} row of runs {runs_text} ({too_small}) is below "
                             f"--min-bytes {format_size(min_bytes)}: lower it to build a baseline from them")
        raise UsageError(f"runs {runs_text} have no {what} measurements to build a baseline from")
    result.profile = Profile(name, tuple(criteria),
                             description=f"Baseline from run(s) {','.join(map(str, run_ids))}: "
                                         f"{pct:g}% of the median per row",
                             source=f"clusterbench baseline create {' '.join(map(str, run_ids))}",
                             hardware=hardware_of(rows) if devices is None else hardware_on(devices))
    return result


def hardware_of(rows: Iterable[Row]) -> Hardware | None:
    """The hardware known-good runs were measured on, as a profile's ``hardware`` (each name
    exactly): a baseline of H100 nodes is no bound for an A100. None where no row names its
    device (imported logs that name none): such a profile applies to any."""
    return hardware_on((r.run, r.m.params.get("device")) for r in rows)


def hardware_on(devices: Iterable[tuple[Run, Any]]) -> Hardware | None:
    """``hardware_of`` from (run, ``device`` param) of each record (``measured_on_device``): the
    same names in the same order from each label once as from every record that carries it."""
    gpus: dict[str, None] = {}
    cpus: dict[str, None] = {}
    for run, label in devices:
        kind, names = measured_on_device(run, label)
        for n in names:
            # the name exactly: its regex metacharacters escaped, its spaces and dashes readable
            exact = re.sub(r"[.^$*+?{}\[\]\\|()]", lambda c: "\\" + c.group(0), n)
            (cpus if kind == CPU else gpus)[exact] = None
    return Hardware(tuple(gpus), tuple(cpus)) if gpus or cpus else None
