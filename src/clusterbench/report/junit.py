"""JUnit XML (``--junit FILE``) for CI systems: every criterion, preflight check or swept node is
a ``testcase`` with its verdict; a failing one carries the measured value, the threshold and the
evidence in its ``failure`` element.

The layout is the one Jenkins, GitLab, GitHub Actions reporters and pytest share:
``testsuites/testsuite/testcase`` with ``failure``, ``error`` or ``skipped`` children and the
counts on each suite (Jenkins xunit-plugin's junit-10.xsd validates it, tests/data/schemas).
Text is stripped of characters XML 1.0 cannot carry (a kernel log line with an escape code), and
of those a CI page would act on rather than show: DEL and C1 controls (``\x9b`` starts a
terminal command where a job's log is printed) and the Unicode bidi controls, which reorder
the text shown ("Trojan Source": a FAIL that reads as a PASS).
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING
from xml.etree import ElementTree as ET

from clusterbench.report import outfile
from clusterbench.units import compact

if TYPE_CHECKING:
    from clusterbench.judge.validate import Outcome
    from clusterbench.preflight.checks import CheckResult

PASS, FAIL, ERROR, SKIPPED = "pass", "fail", "error", "skipped"
STATUSES = (PASS, FAIL, ERROR, SKIPPED)
# XML 1.0 allows tab, newline, carriage return and everything from U+0020 up, except surrogates
# and U+FFFE/U+FFFF; of what it allows, DEL, the C1 controls and the bidi controls go too.
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
                      "|[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def xml_text(text: object) -> str:
    return _NOT_XML.sub("\ufffd", str(text))


@dataclass(frozen=True)
class Case:
    name: str
    classname: str
    status: str                # pass, fail, error, skipped
    message: str = ""          # one line: the verdict with measured value and threshold
    details: str = ""          # the evidence, several lines
    time: float = 0.0

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown test case status {self.status!r}")


@dataclass(frozen=True)
class Suite:
    name: str
    cases: Sequence[Case]
    properties: dict[str, str] = field(default_factory=dict)
    timestamp: str = ""        # ISO 8601, seconds, no zone (the form junit schemas know)
    hostname: str = ""
    time: float = 0.0


def now_stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def _count(cases: Iterable[Case], status: str) -> int:
    return sum(c.status == status for c in cases)


def render(suites: Sequence[Suite], name: str = "clusterbench") -> str:
    """The XML document, with an XML declaration."""
    root = ET.Element("testsuites", {
        "name": xml_text(name),
        "tests": str(sum(len(s.cases) for s in suites)),
        "failures": str(sum(_count(s.cases, FAIL) for s in suites)),
        "errors": str(sum(_count(s.cases, ERROR) for s in suites)),
        "time": f"{sum(s.time for s in suites):.3f}",
    })
    for s in suites:
        el = ET.SubElement(root, "testsuite", {
            "name": xml_text(s.name), "tests": str(len(s.cases)),
            "failures": str(_count(s.cases, FAIL)), "errors": str(_count(s.cases, ERROR)),
            "skipped": str(_count(s.cases, SKIPPED)), "time": f"{s.time:.3f}",
            "timestamp": s.timestamp or now_stamp(), "hostname": xml_text(s.hostname or socket.gethostname()),
        })
        if s.properties:
            props = ET.SubElement(el, "properties")
            for k, v in s.properties.items():
                ET.SubElement(props, "property", {"name": xml_text(k), "value": xml_text(v)})
        for c in s.cases:
            tc = ET.SubElement(el, "testcase", {"name": xml_text(c.name), "classname": xml_text(c.classname),
                                                "time": f"{c.time:.3f}"})
            if c.status == PASS:
                if c.details:
                    ET.SubElement(tc, "system-out").text = xml_text(c.details)
                continue
            tag = {FAIL: "failure", ERROR: "error", SKIPPED: "skipped"}[c.status]
            child = ET.SubElement(tc, tag, {"message": xml_text(c.message), "type": c.status})
            if c.details:
                child.text = xml_text(c.details)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write(path: str | os.PathLike[str], suites: Sequence[Suite], name: str = "clusterbench") -> Path:
    """Write the XML to ``path`` atomically (a CI job never reads half a file)."""
    return outfile.write_text(path, render(suites, name), what="--junit")


# -- what each command judges, as test cases ---------------------------------------------------

def _num(v: float | None, unit: str) -> str:
    return "-" if v is None else f"{v:.6g} {unit}".rstrip()


def outcome_case(o: Outcome, suite: str) -> Case:
    c = o.criterion
    margin = "" if o.margin is None else f", margin {o.margin:+.4g} {o.unit}".rstrip() + (
        f" ({compact(o.margin_pct, 1, True)}%)" if o.margin_pct is not None else "")
    message = f"{o.status}: measured {_num(o.measured, o.unit)}, threshold {o.threshold or c.describe()}{margin}"
    lines = [f"criterion: {c.name}", f"benchmark: {c.benchmark}", f"metric: {c.metric}"]
    if c.params:
        lines.append("params: " + ", ".join(f"{k}={v}" for k, v in c.params.items()))
    if c.source:
        lines.append(f"source: {c.source}")
    lines += [f"measured: {_num(o.measured, o.unit)}", f"threshold: {o.threshold or c.describe()}",
              f"matched measurements: {o.matched}"]
    if o.runs:
        lines.append("runs: " + ", ".join(map(str, o.runs)))
    if o.detail:
        lines.append(f"detail: {o.detail}")
    for f in o.outliers:
        lines.append("outlier: " + ", ".join(f"{k}={v}" for k, v in f.items()))
    status = {"pass": PASS, "fail": FAIL, "error": ERROR}.get(o.status, SKIPPED)
    if status == SKIPPED:
        message = f"skipped: {o.detail}" if o.detail else "skipped"
    return Case(c.name, suite, status, message, "\n".join(lines))


def validation_suite(profile_name: str, outcomes: Sequence[Outcome], runs: Sequence[int | None]) -> Suite:
    return Suite(f"validate {profile_name}", [outcome_case(o, f"clusterbench.validate.{profile_name}")
                                               for o in outcomes],
                 properties={"profile": profile_name, "runs": ",".join(str(r) for r in runs)})


def preflight_suite(results: Sequence[CheckResult], host: str) -> Suite:
    cases = []
    for r in results:
        status = {"ok": PASS, "warning": PASS, "fail": FAIL}.get(r.status, SKIPPED)
        details = "\n".join([f"status: {r.status}", f"summary: {r.summary}", *r.evidence])
        cases.append(Case(r.check, f"clusterbench.preflight.{host}", status, f"{r.status}: {r.summary}", details))
    return Suite(f"preflight {host}", cases, hostname=host)
