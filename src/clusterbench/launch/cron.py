"""Cron schedules as Kubernetes CronJobs (and Slurm's scrontab) read them: five fields, minute
hour day-of-month month day-of-week, each ``*``, a number or name, a range ``a-b``, a step
``*/n`` or ``a-b/n``, or a list of those; or one of the descriptors ``@hourly`` ... ``@yearly``.
Where the two differ, Kubernetes' reader decides: Sunday is 0 only (7 is an error there), and a
descriptor is lower-case.

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
    ("day of week", 0, 6, _DAYS, True),     # Sunday is 0: Kubernetes refuses cron's other Sunday, 7
)
# One part of a time zone name as Kubernetes checks it (validTimeZoneCharacters): 1 to 14 of these.
_TIME_ZONE_PART = re.compile(r"[A-Za-z._\-0-9+]{1,14}")


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
        return s.lower()   # Kubernetes knows @daily, not @DAILY
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
    """An IANA time zone name (``Europe/Berlin``, ``UTC``, ``Etc/GMT+2``) as Kubernetes checks a
    CronJob's ``timeZone``: parts of at most 14 characters, none ``.``, ``..`` or starting with
    '-', not ``Local``; and, where this host has a time zone database, one it knows."""
    parts = text.split("/")
    if len(text) > 64 or any(p in (".", "..") or p.startswith("-") or not _TIME_ZONE_PART.fullmatch(p)
                             for p in parts):
        raise UsageError(f"invalid --time-zone {text!r}: an IANA time zone name such as Europe/Berlin or UTC")
    if text.lower() == "local":
        raise UsageError(f"invalid --time-zone {text!r}: Kubernetes wants an explicit zone such as "
                         "Europe/Berlin or UTC")
    known = _known_time_zones()
    if known and text not in known:
        raise UsageError(f"invalid --time-zone {text!r}: no such time zone in the IANA database")
    return text


def _known_time_zones() -> set[str]:
    """The zones of this host's time zone database; empty where it has none (then the cluster
    is the judge)."""
    import zoneinfo

    return zoneinfo.available_timezones()
