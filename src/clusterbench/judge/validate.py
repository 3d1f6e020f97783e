"""Judge runs against a profile: each criterion ends pass, fail, skipped (with why) or error."""

from __future__ import annotations

import difflib
import math
import statistics
from dataclasses import dataclass, field, replace
from typing import Any

from clusterbench.families import higher_is_better, metric_of
from clusterbench.judge.compare import change_text_pct, common_unit
from clusterbench.judge.hardware import Hardware, applies, foreign_text, measured_on
from clusterbench.judge.outliers import flag_outliers
from clusterbench.judge.profiles import Criterion, Profile
from clusterbench.judge.select import Row, Selection, identity_of
from clusterbench.units import compact, convert

PASS, FAIL, SKIPPED, ERROR = "pass", "fail", "skipped", "error"
STATUSES = (PASS, FAIL, SKIPPED, ERROR)
HARDWARE, NO_MATCH, TOO_FEW = "hardware", "no_match", "too_few"


@dataclass
class Outcome:
    criterion: Criterion
    status: str
    measured: float | None = None
    threshold: str = ""
    margin: float | None = None  # how far inside (+) or outside (-) the bound, in the unit
    margin_pct: float | None = None
    unit: str = ""
    matched: int = 0
    detail: str = ""
    runs: list[int] = field(default_factory=list)
    outliers: list[dict[str, Any]] = field(default_factory=list)
    # Which hosts the failure is on (host -> its worst value there), for --on-fail; a failing
    # measurement of several hosts at once (a multi-node collective) names none.
    failing: dict[str, float] = field(default_factory=dict)
    # The bound as the profile states it (its own unit, every digit), where ``threshold`` shows it
    # in the measurements' unit; "" when the two read the same
    stated: str = ""
    # why a skipped criterion was not judged: HARDWARE (its rows were measured on hardware the
    # profile is not for), NO_MATCH (no measurement matched), TOO_FEW (outliers need 3); "" else
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        c = self.criterion
        return {
            "criterion": c.name, "source": c.source, "status": self.status,
            "benchmark": c.benchmark, "metric": c.metric,
            "params": {**c.params, **dict.fromkeys(c.absent)},   # null: must be absent, as the profile says
            "measured": self.measured, "unit": self.unit, "threshold": self.threshold,
            "stated": self.stated or self.threshold,
            "margin": self.margin, "margin_pct": self.margin_pct, "matched": self.matched,
            "detail": self.detail, "runs": self.runs, "outliers": self.outliers,
            "failing": self.failing, "reason": self.reason,
        }


def _aggregate(values: list[float], how: str) -> float:
    if how == "min":
        return min(values)
    if how == "max":
        return max(values)
    if how == "median":
        return statistics.median(values)
    return statistics.fmean(values)


def _margin(c: Criterion, v: float, bound: float | tuple[float, float]) -> float:
    """Positive inside the bound, negative outside."""
    if isinstance(bound, tuple):
        return min(v - bound[0], bound[1] - v)
    return v - bound if c.op in (">=", ">") else bound - v


def _passes(c: Criterion, v: float, bound: float | tuple[float, float]) -> bool:
    if isinstance(bound, tuple):
        return bound[0] <= v <= bound[1]
    return {">=": v >= bound, ">": v > bound, "<=": v <= bound, "<": v < bound}[c.op]


def _one_unit(c: Criterion, rows: list[Row]) -> list[Row] | None:
    """``rows`` in one unit (the metric's own where they all convert to it, else the first
    row's): runs stored in MB/s and GB/s are compared, never their raw numbers; None where
    some unit does not convert."""
    if len({r.m.unit for r in rows}) == 1:
        return rows
    known = metric_of(c.benchmark, c.metric)
    # compare's conversion, so that validate and compare agree on which units mix (a value
    # without a unit converts to none: units.convert alone would pass it through as GB/s)
    converted = common_unit(rows, known.unit if known is not None else "")
    if converted is None:
        return None
    unit, values = converted
    return [r if r.m.unit == unit else Row(r.run, replace(r.m, value=v, unit=unit))
            for r, v in zip(rows, values, strict=True)]


def _judge_bound(c: Criterion, rows: list[Row]) -> Outcome:
    same = _one_unit(c, rows)
    if same is None:
        units = sorted({r.m.unit for r in rows})
        known = metric_of(c.benchmark, c.metric)
        return Outcome(c, ERROR, threshold=c.describe(known.unit if known else ""), matched=len(rows),
                       detail=f"matching measurements mix units {units} that do not convert")
    rows = same
    unit = rows[0].m.unit
    shown = c.describe_in(unit)  # in the measurements' unit, beside them
    stated = c.describe(unit)     # as the profile states it
    try:
        if c.op == "range":
            bound: float | tuple[float, float] = (convert(c.low, c.unit, unit), convert(c.high, c.unit, unit))
            ref = bound[0] if bound[0] else bound[1]
        else:
            bound = convert(c.bound(), c.unit, unit)
            ref = bound
    except ValueError as e:
        return Outcome(c, ERROR, threshold=shown, matched=len(rows), detail=str(e))
    values = [r.m.value for r in rows]
    if c.aggregate == "all":
        # every match must pass; report the worst one
        worst = min(rows, key=lambda r: _margin(c, r.m.value, bound))
        measured = worst.m.value
        ok = all(_passes(c, v, bound) for v in values)
        failing = sum(not _passes(c, v, bound) for v in values)
        detail = (f"worst of {len(values)}" if len(values) > 1 else "")
        if failing:
            where = ", ".join(f"{k}={v}" for k, v in worst.m.params.items() if k in ("host", "device", "rank", "src", "dst"))
            side = {">=": "below", ">": "below", "<=": "above", "<": "above"}.get(c.op, "outside")
            detail = f"{failing} of {len(values)} {side} the bound" if len(values) > 1 else ""
            if where:
                detail += (f"; worst at {where}" if detail else f"at {where}")
    else:
        measured = _aggregate(values, c.aggregate)
        ok = _passes(c, measured, bound)
        detail = f"{c.aggregate} of {len(values)}" if len(values) > 1 else ""
    margin = _margin(c, measured, bound)
    if isinstance(bound, tuple):   # in percent of the bound the margin is measured to
        near = bound[0] if measured - bound[0] <= bound[1] - measured else bound[1]
        ref = near or ref
    pct = margin / abs(ref) * 100 if ref else None
    if pct is not None and not math.isfinite(pct):   # a threshold of 1e308 TB/s is inf GB/s: inf/inf
        pct = None
    failing: dict[str, float] = {}
    bad_rows = [r for r in rows if not _passes(c, r.m.value, bound)] if c.aggregate == "all" else \
        ([] if ok else rows)
    for r in bad_rows:
        host = r.key("host")
        if host is not None:
            v = r.m.value if c.aggregate == "all" else measured
            failing[host] = v if host not in failing else min(failing[host], v, key=lambda x: _margin(c, x, bound))
    return Outcome(c, PASS if ok else FAIL, measured, shown, margin, pct, unit, len(rows), detail,
                   failing=failing, stated=stated if stated != shown else "")


def _deviation(median: float, value: float) -> str:
    """How far off the median a value is, in percent (``-7.5e+302%`` off a median of 1e-300,
    never 300 digits or ``inf%``); "from 0" where the median is 0."""
    return "from 0" if median == 0 else change_text_pct(median, value)


def _judge_outliers(c: Criterion, rows: list[Row]) -> Outcome:
    hib = c.higher_is_better if c.higher_is_better is not None else \
        higher_is_better(c.benchmark, c.metric, rows[0].m.unit)
    # GPU 3 of node a and GPU 3 of node b are two GPUs: pooled, a slow one hid behind the others
    # (and every node with a GPU 3 was drained)
    identity = identity_of(rows, c.by)
    # Compare like with like: one group per combination of the other params (e.g. per size).
    groups: dict[tuple, dict[str, list[float]]] = {}
    for r in rows:
        key = identity(r)
        if key is None:
            continue
        rest = tuple(sorted((k, str(v)) for k, v in r.m.params.items() if k not in (c.by, "rank", "device", "host")))
        groups.setdefault(rest, {}).setdefault(key, []).append(r.m.value)
    usable = {g: vals for g, vals in groups.items() if len(vals) >= 3}
    if not groups and c.by != "run" and not c.by.startswith("tag:"):
        # no row has the param at all: a typo (devcie) is an error, not "too few to compare"
        have = {k for r in rows for k in r.m.params} | {"host"}
        near = difflib.get_close_matches(c.by, sorted(have), n=1, cutoff=0.8)
        if near:
            return Outcome(c, ERROR, matched=len(rows), threshold=c.describe(),
                           detail=f"no {c.benchmark}/{c.metric} measurement has a param {c.by!r} "
                                  f"(did you mean {near[0]}?)")
    if not usable:
        n = max((len(v) for v in groups.values()), default=0)
        return Outcome(c, SKIPPED, matched=len(rows), threshold=c.describe(), reason=TOO_FEW,
                       detail=f"needs at least 3 distinct {c.by} values to compare, found {n}")
    found = []
    for g, vals in usable.items():
        per_key = {k: statistics.median(v) for k, v in vals.items()}
        for o in flag_outliers(per_key, threshold=c.threshold, higher_is_better=hib, min_rel_dev=c.min_rel_dev):
            found.append({c.by: o.key, "value": o.value, "median": o.median, "z": o.z,
                          "rel_dev": o.rel_dev, "params": dict(g)})
    keys = sorted({str(f[c.by]) for f in found})
    unit = rows[0].m.unit
    detail = (f"{len(usable)} group(s), {max(len(v) for v in usable.values())} {c.by}s"
              if not found else "outlier(s): " + "; ".join(
                  f"{f[c.by]} {_deviation(f['median'], f['value'])} vs median {f['median']:.4g} {unit} "
                  f"(z {compact(f['z'], 1, True)})"
                  for f in sorted(found, key=lambda f: f["z"] if hib else -f["z"])[:5]))
    worst = min(found, key=lambda f: f["rel_dev"] if hib else -f["rel_dev"]) if found else None
    failing: dict[str, float] = {}
    for f in found:
        hosts = {r.key("host") for r in rows if identity(r) == str(f[c.by])}
        for host in hosts - {None}:
            failing[host] = f["value"]
    return Outcome(c, FAIL if found else PASS, worst["value"] if worst else None, c.describe(),
                   unit=unit, matched=len(rows), detail=detail if not keys or len(found) <= 5 else detail + " ...",
                   outliers=found, failing=failing)


def _unmatched(c: Criterion, rows: list[Row]) -> Outcome:
    """A criterion no measurement matches: skipped, saying why; an error where its benchmark's
    measurements lack one of its params but have one spelt nearly the same (``placment``): a typo
    that, skipped, would let the command pass without the check ever running. ``rows``: those of
    the criterion's benchmark and metric."""
    known = metric_of(c.benchmark, c.metric)
    threshold = c.describe(known.unit if known else "")
    want = ", ".join([f"{k}={v}" for k, v in c.params.items()] + [f"no {k}" for k in c.absent])
    detail = f"no {c.benchmark}/{c.metric} measurement" + (f" with {want}" if want else "")
    have = {k for r in rows if r.m.benchmark == c.benchmark and r.m.metric == c.metric for k in r.m.params}
    missing = [k for k in c.params if have and k not in have]
    for k in missing:
        near = difflib.get_close_matches(k, sorted(have), n=1, cutoff=0.8)
        if near:
            return Outcome(c, ERROR, threshold=threshold,
                           detail=f"{detail}: none has a param {k!r} (did you mean {near[0]}?)")
    if missing:
        detail += f": none has a param {missing[0]!r}"
    return Outcome(c, SKIPPED, threshold=threshold, detail=detail, reason=NO_MATCH)


def _foreign(c: Criterion, hw: Hardware, matched: list[Row], on_rows: list[Row]) -> Outcome:
    """A criterion not judged because its measurements (``matched``; or, where it matched none,
    every row of the runs: ``on_rows``) were made on hardware the profile is not for."""
    on: dict[int | None, set[str]] = {}
    for r in matched or on_rows:
        kind, names = measured_on(r.run, r.m)
        on.setdefault(r.run.id, set()).update(f"{n} ({kind})" if kind else n for n in names)
    known = metric_of(c.benchmark, c.metric)
    return Outcome(c, SKIPPED, threshold=c.describe(known.unit if known else ""), matched=len(matched),
                   detail=foreign_text(hw, on), reason=HARDWARE,
                   runs=sorted({r.run.id for r in matched or on_rows if r.run.id is not None}))


def evaluate(profile: Profile, rows: list[Row]) -> list[Outcome]:
    """Every criterion of ``profile`` on ``rows``. A profile that says what hardware it is for
    judges only the rows measured on it (or on devices nobody named); a criterion whose rows are
    all on other hardware, and every criterion when none of ``rows`` is on it, is skipped with
    the reason ``hardware``."""
    outcomes = []
    hw = profile.hardware
    ours = rows if hw is None else _applying(hw, rows)
    if hw is not None and rows and not ours:   # not one row this profile is for: none is judged
        everything = Selection(rows)
        return [_foreign(c, hw, everything.select(c.benchmark, c.metric, c.params, c.absent), rows)
                for c in profile.criteria]
    index = Selection(ours)
    all_index = index if len(ours) == len(rows) else Selection(rows)
    for c in profile.criteria:
        of_metric = index.of_metric(c.benchmark, c.metric)
        matched = index.select(c.benchmark, c.metric, c.params, c.absent)
        if not matched:
            elsewhere = all_index.select(c.benchmark, c.metric, c.params, c.absent) if hw is not None else []
            outcomes.append(_foreign(c, hw, elsewhere, elsewhere) if hw is not None and elsewhere
                            else _unmatched(c, of_metric))
            continue
        try:
            o = _judge_outliers(c, matched) if c.outliers else _judge_bound(c, matched)
        except (ValueError, ZeroDivisionError, TypeError) as e:
            o = Outcome(c, ERROR, matched=len(matched), detail=f"{type(e).__name__}: {e}")
        o.runs = sorted({r.run.id for r in matched if r.run.id is not None})
        if hw is not None and len(ours) < len(rows):   # a mixed selection: say what was left out
            left = len(all_index.select(c.benchmark, c.metric, c.params, c.absent)) - len(matched)
            if left:
                o.detail = "; ".join(x for x in (o.detail, f"{left} on other hardware not judged") if x)
        outcomes.append(o)
    return outcomes


def _applying(hw: Hardware, rows: list[Row]) -> list[Row]:
    """The rows ``applies`` to ``hw``, asked once per run and device label (all ``measured_on``
    reads of a row): a thousand runs' rows are eight labels a run, not 400,000 questions."""
    answers: dict[tuple[int, Any], bool] = {}
    out = []
    for r in rows:
        label = r.m.params.get("device")
        if label is not None and not isinstance(label, (str, int, float, bool)):
            ok = applies(hw, r.run, r.m)   # a list or an object: no key to remember it by
        else:
            key = (id(r.run), type(label), label)
            ok = answers.get(key)
            if ok is None:
                ok = answers[key] = applies(hw, r.run, r.m)
        if ok:
            out.append(r)
    return out


def exit_code(outcomes: list[Outcome]) -> int:
    """0 when nothing failed, 1 when any criterion failed or errored."""
    return 1 if any(o.status in (FAIL, ERROR) for o in outcomes) else 0


def nothing_checked(outcomes: list[Outcome]) -> bool:
    """No criterion was judged, and not because the runs are on hardware the profile is not for
    (that is an answer: the profile does not apply, exit 0); the profile matched nothing."""
    return all(o.status == SKIPPED for o in outcomes) and not any(o.reason == HARDWARE for o in outcomes)


def not_for_this_hardware(outcomes: list[Outcome]) -> bool:
    """Every criterion skipped because the runs are on other hardware than the profile's."""
    return bool(outcomes) and all(o.status == SKIPPED and o.reason == HARDWARE for o in outcomes)
