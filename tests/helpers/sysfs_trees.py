"""The sysfs trees of real hosts (tests/data/sysfs) that the device tests read."""

from __future__ import annotations

from paths import TESTS

SYSFS = TESTS / "data" / "sysfs"
