"""Tests of clusterbench.launch.cron: cron schedules as Kubernetes CronJobs (and Slurm's scrontab) read them."""

from __future__ import annotations

import pytest

from clusterbench.errors import UsageError
from clusterbench.launch.cron import check_schedule, check_time_zone


@pytest.mark.parametrize("good", ["0 3 * * *", "*/15 * * * *", "0 3 * * 1-5", "30 2 1,15 * ?", "0 0 * JAN-MAR SUN",
                                  "@daily", "@hourly", "5-59/10 0-23/2 * * *"])
def test_schedules_kubernetes_accepts(good):
    assert check_schedule(good) == " ".join(good.split())


@pytest.mark.parametrize("bad, why", [
    ("0 3 * *", "expected 5 fields"), ("0 3 * * * *", "expected 5 fields"), ("60 3 * * *", "minute '60'"),
    ("0 24 * * *", "hour '24'"), ("0 3 0 * *", "day of month '0'"), ("0 3 * 13 *", "month '13'"),
    ("0 3 * * 8", "day of week '8'"), ("0 3 * * 7", "day of week '7'"), ("*/0 * * * *", "step '0'"), ("5-1 * * * *", "runs backwards"),
    ("0 3 * * *\n* * * * *", "control characters"), ("TZ=UTC 0 3 * * *", "--time-zone"),
    ("0 3 * * MOO", "day of week 'MOO'"), ("@every 5m", "expected 5 fields"), ("? * * * *", "minute '?'"),
])
def test_bad_schedules(bad, why):
    with pytest.raises(UsageError, match=why):
        check_schedule(bad)


@pytest.mark.parametrize("schedule", ["0 3 * * 7", "0 3 * * 5-7", "0 3 * * 0,7"])
def test_cron_sunday_is_0_only(schedule: str) -> None:
    """Kubernetes' cron reader bounds day-of-week at 0-6: '7' was written into a CronJob the
    API server refuses."""
    with pytest.raises(UsageError, match="day of week"):
        check_schedule(schedule)
    assert check_schedule("0 3 * * 0") == "0 3 * * 0"


@pytest.mark.parametrize("zone", ["Local", "local", "Etc/-5", "Europe/Abcdefghijklmnop", "Mars/Olympus"])
def test_time_zones_kubernetes_refuses(zone: str) -> None:
    import zoneinfo

    if zone == "Mars/Olympus" and not zoneinfo.available_timezones():
        pytest.skip("this host has no time zone database to tell an unknown zone by")
    with pytest.raises(UsageError, match="--time-zone"):
        check_time_zone(zone)
    for good in ("UTC", "Europe/Berlin", "Etc/GMT+2", "America/Argentina/Buenos_Aires"):
        assert check_time_zone(good) == good
