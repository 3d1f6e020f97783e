"""Everything a report shows, gathered once: groups of runs, the verdict, validation, comparison
(with its redundant rows folded), degraded nodes, noise inside runs, environment differences
between the groups, telemetry, and efficiency vs theory and vs datasheet peaks. HTML and
Markdown render this, so both say the same verdict with the same counts."""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from clusterbench.envinfo import diff as envdiff
from clusterbench.errors import UsageError
from clusterbench.families import is_judged, metric_of
from clusterbench.families.collectives.spec import ALGBW, BUSBW, optimal_algbw
from clusterbench.judge import noise
from clusterbench.judge.changepoint import Settings
from clusterbench.judge.compare import (
    ADJUST_NONE,
    BETTER,
    DEFAULT_ADJUST,
    INSUFFICIENT,
    NOISY,
    SAME,
    WORSE,
    Comparison,
    change_text_pct,
    compare,
    family_size,
)
from clusterbench.judge.degraded import Degraded, Scan, scan_degraded
from clusterbench.judge.efficiency import (
    DevicePercent,
    device_percent_of_peak,
    nodes_of,
    run_link_efficiency,
)
from clusterbench.judge.history import Series, build_series, detect, run_time
from clusterbench.judge.profiles import Profile
from clusterbench.judge.select import Row, rows_of
from clusterbench.judge.text import failure_text, fmt, params_text, varying_keys
from clusterbench.judge.theory import Efficiency, link_speed_for
from clusterbench.judge.validate import Outcome, evaluate
from clusterbench.records import COMPLETE, Measurement, Run, TelemetrySample

PASS, FAIL, REGRESSION = "PASS", "FAIL", "REGRESSION"
NOISY_VERDICT = "NOISY"
STATUS_ORDER = (WORSE, BETTER, SAME, NOISY, INSUFFICIENT)


@dataclass
class Group:
    label: str  # the selector the user gave
    runs: list[tuple[Run, list[Measurement]]]
    telemetry: dict[int, list[TelemetrySample]] = field(default_factory=dict)  # run id -> samples
    # (what the rows were made from, the rows): every section of a report reads them, and making
    # a row per measurement each time cost more than the rest of the report
    _rows: tuple[list[tuple[Run, list[Measurement]]], list[int], list[Row]] | None = field(
        default=None, init=False, repr=False, compare=False)

    @property
    def rows(self) -> list[Row]:
        cached = self._rows
        if cached is None or len(cached[0]) != len(self.runs) or any(
                a is not b or n != len(b[1]) for a, n, b in zip(cached[0], cached[1], self.runs)):
            cached = self._rows = (list(self.runs), [len(ms) for _, ms in self.runs], rows_of(self.runs))
        return list(cached[2])


@dataclass(frozen=True)
class EnvDiff:
    """What differs between the environment of group A's first run and another group's."""

    a: str                      # "run 3 (env=a) on host1"
    b: str
    differences: list[envdiff.Difference]


@dataclass(frozen=True)
class Verdict:
    """The report's first line: PASS, FAIL (validation failed, a run failed or is incomplete, a
    degraded host or device), REGRESSION (a compared row is worse) or NOISY (rows too noisy or
    with too few runs to call, or noise inside runs); ``reasons`` hold the counts behind it, and
    say so plainly when rows only lack repetitions."""

    status: str
    reasons: list[str]
    # what failed, one phrase each: every failed or erroneous criterion with its margin, then
    # the rows a comparison found worse (the first ``WORSE_NAMED``) and the runs not complete
    failures: list[str] = field(default_factory=list)

    @property
    def line(self) -> str:
        return f"{self.status}: " + "; ".join(self.reasons) if self.reasons else self.status


@dataclass
class Findings:
    groups: list[Group]
    profile: Profile | None = None
    outcomes: list[Outcome] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    compare_error: str = ""
    degraded: list[Degraded] = field(default_factory=list)
    degraded_scan: Scan | None = None   # what the degraded search could judge (None: not run)
    efficiencies: list[tuple[int, Efficiency]] = field(default_factory=list)  # (run id, eff)
    device_percents: list[tuple[int, DevicePercent]] = field(default_factory=list)
    theory: dict[tuple[str, str], float] = field(default_factory=dict)  # (benchmark, metric) -> GB/s
    link: str | None = None
    history: list[Series] = field(default_factory=list)  # headline per host over time, with changes
    warnings: list[tuple[int, noise.NoiseWarning]] = field(default_factory=list)  # (run id, warning)
    noise_rows: int = 0   # rows with per-iteration statistics, the only ones the noise check can read
    env_diffs: list[EnvDiff] = field(default_factory=list)
    # how the A/B rows' p-values were adjusted: the same judge as ``compare``, so that the
    # report's verdict and ``compare``'s table agree row for row at the same setting
    adjust: str = DEFAULT_ADJUST

    @property
    def all_rows(self) -> list[Row]:
        return [r for g in self.groups for r in g.rows]

    @property
    def shown_comparisons(self) -> list[Comparison]:
        return fold(self.comparisons)[0]

    @property
    def folded_comparisons(self) -> list[Comparison]:
        return fold(self.comparisons)[1]

    def device_percents_shown(self, n: int) -> list[tuple[int, DevicePercent]]:
        """The ``n`` rows vs datasheet peak a page has room for: the first, in their order, of up
        to ``DEVICE_ROWS_IN_ORDER`` rows (a few runs); of more (a fleet's night has 56,000), the
        ``n`` furthest below their peak, lowest first, so that the slow devices are the ones named."""
        if len(self.device_percents) <= DEVICE_ROWS_IN_ORDER:
            return self.device_percents[:n]
        return heapq.nsmallest(n, self.device_percents, key=lambda rd: rd[1].percent)

    def comparison_counts(self) -> dict[str, int]:
        """Rows per status over the shown (not folded) comparisons."""
        shown = self.shown_comparisons
        return {s: sum(c.status == s for c in shown) for s in STATUS_ORDER}

    def comparison_text(self) -> str:
        """``5 worse, 2 better, 13 same, 16 noisy of 36 rows (p adjusted by fdr over 36
        measurements)``: the same words everywhere."""
        counts = self.comparison_counts()
        parts = [f"{n} {s}" for s, n in counts.items() if n or s in (WORSE, BETTER)]
        text = ", ".join(parts) + f" of {sum(counts.values())} rows"
        family = family_size(self.comparisons)
        if self.adjust != ADJUST_NONE and family > 1:
            text += f" (p adjusted by {self.adjust} over {family} measurements)"
        return text

    def validation_counts(self) -> dict[str, int]:
        return {s: sum(o.status == s for o in self.outcomes) for s in ("pass", "fail", "skipped", "error")}

    def verdict(self) -> Verdict:
        reasons: list[str] = []
        failures = [failure_text(o) for o in self.outcomes if o.status in ("fail", "error")]
        status = PASS
        bad_runs = [run for g in self.groups for run, _ in g.runs if run.status != COMPLETE]
        if self.outcomes:
            counts = self.validation_counts()
            reasons.append(f"validation against {self.profile.name if self.profile else 'the profile'}: "
                           + ", ".join(f"{n} {s}" for s, n in counts.items()))
            if counts["fail"] or counts["error"]:
                status = FAIL
        if bad_runs:
            reasons.append(f"{len(bad_runs)} run(s) not complete: "
                           + ", ".join(f"{r.id} {r.status}" for r in bad_runs[:5]))
            status = FAIL
        if self.degraded:
            reasons.append(f"{len(self.degraded)} degraded host/device row(s)")
            status = FAIL
            failures += [degraded_text(d) for d in self.degraded[:WORSE_NAMED]]
        if self.comparisons:
            counts = self.comparison_counts()
            reasons.append(f"comparison {self.groups[0].label} vs {self.groups[1].label}: "
                           + self.comparison_text())
            if counts[WORSE] and status == PASS:
                status = REGRESSION
            worse = [c for c in self.shown_comparisons if c.status == WORSE]
            keys = varying_keys([c.params for c in self.comparisons])
            failures += [worse_text(c, keys) for c in worse[:WORSE_NAMED]]
            if len(worse) > WORSE_NAMED:
                failures.append(f"{len(worse) - WORSE_NAMED} more worse row(s) in the comparison's table")
            if (counts[NOISY] or counts[INSUFFICIENT]) and status == PASS:
                status = NOISY_VERDICT
            untested = [c for c in self.shown_comparisons if c.status == INSUFFICIENT]
            few = [c for c in untested if c.a.finite and c.b.finite and min(c.a.n, c.b.n) < 2]
            if few:
                # NOISY for want of runs must not read as noisy hardware: say what is missing.
                only = status == NOISY_VERDICT and not counts[NOISY] and not self.warnings
                reasons.append(f"not enough repetitions to judge {len(few)} row(s) ({_fewest(few)}; a test "
                               "needs 2 per side)" + (": nothing measured was noisy" if only else ""))
            if len(untested) > len(few):
                reasons.append(f"{len(untested) - len(few)} row(s) not tested: a value, or the difference "
                               "of the means, is not finite")
        elif self.compare_error:
            reasons.append(f"comparison: {self.compare_error}")
        if self.warnings:
            # A validation that passed stays PASS: noise makes a value worse far more often than
            # better (other load slows a run), so a pass despite it is a pass, and qualify's
            # exit code says so too. Where nothing was judged against a bound, noise is the verdict.
            judged = any(o.status in ("pass", "fail") for o in self.outcomes)
            reasons.append(f"{len(self.warnings)} noise warning(s) inside runs"
                           + (": passed all the same" if judged and status == PASS else ""))
            if status == PASS and not judged:
                status = NOISY_VERDICT
        return Verdict(status, reasons, failures)


# Rows vs datasheet peak up to which a report lists them in run order (the page shows them
# all); past it, the lowest first (``Findings.device_percents_shown``).
DEVICE_ROWS_IN_ORDER = 100

WORSE_NAMED = 10   # rows of a comparison (or degraded rows) a verdict names; its table has them all


def worse_text(c: Comparison, keys: set[str]) -> str:
    """A row a comparison found worse, in one phrase: what it is (``keys``: the params that tell
    the rows apart) and by how much B is off A."""
    shown = params_text(c.params, keys) if keys else "-"
    what = " ".join(x for x in (c.benchmark, c.metric, shown) if x != "-")
    return f"{what}: {change_text_pct(c.a.mean, c.b.mean)} (B vs A)"


def degraded_text(d: Degraded) -> str:
    o = d.outlier
    off = change_text_pct(o.median, o.value) if o.median else "from 0"
    return f"{d.by} {o.key}: {d.benchmark} {d.metric} {fmt(o.value, d.unit)}, {off} off the median"


def _fewest(rows: list[Comparison]) -> str:
    """``n=1 vs 1`` when every row has the same counts, else the fewest values on a side."""
    pairs = {(c.a.n, c.b.n) for c in rows}
    if len(pairs) == 1:
        a, b = pairs.pop()
        return f"n={a} vs {b}"
    return f"as few as n={min(min(p) for p in pairs)} on a side"


def fold(comparisons: list[Comparison]) -> tuple[list[Comparison], list[Comparison]]:
    """(shown, folded): a row folds away when the family declares its metric redundant with one
    the comparison shows for the same params (algbw and time with busbw), or when it is a count
    or check (not judged) that is zero everywhere (all-zero #wrong)."""
    have = {(c.benchmark, c.metric, _key(c)) for c in comparisons}
    shown, folded = [], []
    for c in comparisons:
        m = metric_of(c.benchmark, c.metric)
        redundant = m is not None and m.redundant_with and \
            (c.benchmark, m.redundant_with, _key(c)) in have
        all_zero = not is_judged(c.benchmark, c.metric) and c.a.mean == c.b.mean == 0 \
            and c.a.sd == c.b.sd == 0
        (folded if redundant or all_zero else shown).append(c)
    return shown, folded


def _key(c: Comparison) -> str:
    return repr(sorted(c.params.items(), key=lambda kv: kv[0]))


def _environment_diffs(groups: list[Group]) -> list[EnvDiff]:
    """Group A's first run against each other group's first run, as ``env diff`` compares two
    runs (their first hosts)."""
    firsts = [(g.label, g.runs[0][0]) for g in groups if g.runs]
    if len(firsts) < 2:
        return []
    (label_a, run_a), out = firsts[0], []
    env_a = envdiff.run_environment(run_a)
    for label_b, run_b in firsts[1:]:
        env_b = envdiff.run_environment(run_b)
        out.append(EnvDiff(f"run {run_a.id} ({label_a}) on {env_a.get('host') or '?'}",
                           f"run {run_b.id} ({label_b}) on {env_b.get('host') or '?'}",
                           envdiff.diff(env_a, env_b)))
    return out


def gather(groups: list[Group], *, profile: Profile | None = None, link: str | None = None,
           nodes: int | None = None, adjust: str = DEFAULT_ADJUST) -> Findings:
    f = Findings(groups, profile=profile, link=link, adjust=adjust)
    rows = f.all_rows
    if profile is not None:
        f.outcomes = evaluate(profile, rows)
    if len(groups) == 2:
        try:
            f.comparisons = compare(groups[0].rows, groups[1].rows, adjust_by=adjust)
        except UsageError as e:
            f.compare_error = str(e)
    f.degraded_scan = scan_degraded(rows)
    f.degraded = f.degraded_scan.found
    f.history = history_of(groups)
    f.env_diffs = _environment_diffs(groups)
    for g in groups:
        for run, ms in g.runs:
            # a run of a --repeat is not told to be repeated
            stats = noise.row_stats(ms)
            f.warnings += [(run.id, w) for w in noise.check(ms, repeating="repeat_group" in run.tags, stats=stats)]
            f.noise_rows += len(stats)
            f.efficiencies += [(run.id, e) for e in run_link_efficiency(run, ms, link, nodes)]
            f.device_percents += [(run.id, d) for d in device_percent_of_peak(run, ms)]
            rate = link_speed_for(run.tags, link)
            n = nodes_of(run, nodes)
            if rate and n >= 2:
                for m in ms:
                    opt = optimal_algbw(m.benchmark, rate, n)
                    if opt is None or (m.benchmark, m.metric) in f.theory:
                        continue
                    if m.metric == ALGBW.name:
                        f.theory[(m.benchmark, m.metric)] = opt
                    elif m.metric == BUSBW.name:  # busbw at the optimum is the link speed itself
                        f.theory[(m.benchmark, m.metric)] = rate / 1e9
    return f


# the fewest runs in which a change of level can be found (changepoint.Settings.min_size on each
# side): a shorter series says nothing over time, and its plot only crowds an A/B report
HISTORY_MIN_RUNS = 2 * Settings().min_size


def history_of(groups: list[Group]) -> list[Series]:
    """Each host's headline series across the selected runs in time order, with the changes
    found in it; only series measured in at least ``HISTORY_MIN_RUNS`` runs."""
    runs = {run.id: (run, ms) for g in groups for run, ms in g.runs}
    ordered = sorted(runs.values(), key=lambda rm: (run_time(rm[0]) is None, rm[0].started_at or "", rm[0].id or 0))
    series = [s for s in build_series(ordered) if len(s.points) >= HISTORY_MIN_RUNS]
    return detect(series)
