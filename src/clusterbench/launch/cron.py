"""Cron schedules as Kubernetes CronJobs (and Slurm's scrontab) read them: five fields, minute
hour day-of-month month day-of-week, each ``*``, a number or name, a range ``a-b``, a step
``*/n`` or ``a-b/n``, or a list of those; or one of the descriptors ``@hourly`` ... ``@yearly``.

A schedule is checked here and then written into a manifest by the YAML dumper, never formatted
into text: a value that is not a schedule (a newline, a ``#``, a ``TZ=`` prefix) is an error.
"""

from __future__ import annotations

import re

from clusterbench.errors import UsageError

DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_MONTHS = {m: i + 1 for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}
_DAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# name, lowest, highest, names, whether ? (no specific value) is allowed
_FIELDS = (
    ("minute", 0, 59, {}, False),
    ("hour", 0, 23, {}, False),
    ("day of month", 1, 31, {}, True),
    ("month", 1, 12, _MONTHS, False),
    ("day of week", 0, 7, _DAYS, True),     # 0 and 7 are both Sunday
)
_TIME_ZONE = re.compile(r"[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+)*")


def _value(text: str, what: str, lo: int, hi: int, names: dict[str, int]) -> int:
    digits = re.fullmatch(r"[0-9]+", text) is not None   # not str.isdigit: '٣' and '²' are not cron
    v = int(text) if digits else names.get(text.lower())
    if v is None or not lo <= v <= hi:
        raise ValueError(f"{what} {text!r} is not in {lo}-{hi}" + (" or a name" if names else ""))
    return v


def _field(text: str, what: str, lo: int, hi: int, names: dict[str, int], question: bool) -> None:
    if text == "?" and question:
        return
    for part in text.split(","):
        base, slash, step = part.partition("/")
        if slash and (not re.fullmatch(r"[0-9]+", step) or int(step) == 0):
            raise ValueError(f"{what} step {step!r} is not a positive number")
        if base == "*":
            continue
        first, dash, last = base.partition("-")
        a = _value(first, what, lo, hi, names)
        if dash:
            b = _value(last, what, lo, hi, names)
            if b < a:
                raise ValueError(f"{what} range {base!r} runs backwards")
        elif slash and not base:
            raise ValueError(f"{what} {part!r} has a step but nothing to step over")


def check_schedule(text: str) -> str:
    """``text`` if it is a cron schedule Kubernetes accepts, else a UsageError saying why."""
    if not isinstance(text, str) or re.search(r"[\x00-\x1f\x7f]", text):
        raise UsageError(f"invalid --schedule {text!r}: control characters are not allowed")
    s = text.strip()
    if s.lower() in DESCRIPTORS:
        return s
    fields = s.split()
    if s.upper().startswith(("TZ=", "CRON_TZ=")):
        raise UsageError(f"invalid --schedule {text!r}: give the time zone with --time-zone, not in the schedule")
    if len(fields) != 5:
        raise UsageError(f"invalid --schedule {text!r}: expected 5 fields (minute hour day-of-month month "
                         f"day-of-week) or one of {', '.join(DESCRIPTORS)}, got {len(fields)}")
    try:
        for f, (what, lo, hi, names, question) in zip(fields, _FIELDS):
            _field(f, what, lo, hi, names, question)
    except ValueError as e:
        raise UsageError(f"invalid --schedule {text!r}: {e}") from None
    return " ".join(fields)


def check_time_zone(text: str) -> str:
    """An IANA time zone name (``Europe/Berlin``, ``UTC``, ``Etc/GMT+2``)."""
    if not _TIME_ZONE.fullmatch(text) or len(text) > 64:
        raise UsageError(f"invalid --time-zone {text!r}: an IANA time zone name such as Europe/Berlin or UTC")
    return text
