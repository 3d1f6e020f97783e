"""JUnit XML as the tests read it: parsed, checked against the JUnit XSD, its test cases by name."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from paths import TESTS

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
