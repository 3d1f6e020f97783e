"""Tests of clusterbench.report.junit: jUnit XML (``--junit FILE``) for CI systems."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from paths import TESTS

from clusterbench.errors import UsageError
from clusterbench.report import junit

xmlschema = pytest.importorskip("xmlschema", reason="xmlschema (test extra) validates against the JUnit XSD")


SCHEMA = xmlschema.XMLSchema(str(TESTS / "data" / "schemas" / "junit-10.xsd"))


def _read(path: Path) -> ET.Element:
    SCHEMA.validate(str(path))
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    for suite in root.findall("testsuite"):   # the counts CI systems show are the cases'
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases)
        for tag, attr in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
            assert int(suite.get(attr)) == sum(c.find(tag) is not None for c in cases)
    return root


def _cases(root: ET.Element) -> dict[str, ET.Element]:
    return {c.get("name"): c for c in root.iter("testcase")}


def _special(path: Path, kind: str) -> None:
    if kind == "device":   # /dev/null's numbers, made in the test's directory
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    else:
        os.mkfifo(path)


def _is(path: Path, kind: str) -> bool:
    mode = os.lstat(path).st_mode
    return stat.S_ISCHR(mode) if kind == "device" else stat.S_ISFIFO(mode)


def test_render_escapes_and_drops_what_xml_cannot_carry(tmp_path):
    suite = junit.Suite('a <suite> & "quotes"', [
        junit.Case("pass\x00case", "c", junit.PASS, details="fine"),
        junit.Case("bad", "c", junit.FAIL, "measured 1 < 2 & worse", "line1\nline2 \x07 bell"),
        junit.Case("err", "c", junit.ERROR, "exit 2"),
        junit.Case("skip", "c", junit.SKIPPED, "no data"),
    ], properties={"k": "v&"})
    path = junit.write(tmp_path / "x.xml", [suite])
    root = _read(path)
    cases = _cases(root)
    assert set(cases) == {"pass\ufffdcase", "bad", "err", "skip"}
    assert cases["bad"].find("failure").get("message") == "measured 1 < 2 & worse"
    assert cases["bad"].find("failure").text == "line1\nline2 \ufffd bell"
    assert cases["pass\ufffdcase"].find("system-out").text == "fine"
    assert root.get("tests") == "4" and root.get("failures") == "1" and root.get("errors") == "1"
    with pytest.raises(ValueError):
        junit.Case("x", "c", "passed")
    # the schema is a real check: a test case without a name is refused
    broken = tmp_path / "broken.xml"
    broken.write_text('<testsuites><testsuite tests="1"><testcase/></testsuite></testsuites>')
    assert not SCHEMA.is_valid(str(broken))


def test_junit_text_keeps_no_reordering_or_control_characters():
    from clusterbench.report import junit

    text = "crit \u202eLIAF\u202c \u2066x\u2069 \x7f\x85\x9b[2J ok\nline two"
    xml_doc = junit.render([junit.Suite(text, [junit.Case(text, text, junit.FAIL, text, text)],
                                        properties={text: text}, hostname=text)])
    root = ET.fromstring(xml_doc.encode())
    case = root.find("testsuite/testcase")
    failure = case.find("failure")
    for value in (case.get("name"), failure.get("message"), failure.text,
                  root.find("testsuite/properties/property").get("value")):
        assert not re.search("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]", value), value
        assert "crit \ufffdLIAF\ufffd" in value
    assert failure.text.endswith("ok\nline two")


def test_junit_never_replaces_a_device(tmp_path):
    dev = tmp_path / "dev"
    _special(dev, "device")
    with pytest.raises(UsageError, match="not a regular file"):
        junit.write(dev, [junit.Suite("s", [junit.Case("c", "k", junit.PASS)])])
    assert _is(dev, "device")
