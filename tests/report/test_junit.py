"""Tests of clusterbench.report.junit: jUnit XML (``--junit FILE``) for CI systems."""

from __future__ import annotations

import re
from xml.etree import ElementTree as ET

import pytest
from junit_xml import SCHEMA, _cases, _read
from special_files import _is, _special

from clusterbench.errors import UsageError
from clusterbench.report import junit


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
