"""``--junit FILE`` on validate, preflight, sweep and qualify: JUnit XML that Jenkins' junit-10.xsd
(tests/data/schemas) accepts and that reads back with xml.etree the way CI systems read it
(testsuites/testsuite/testcase with failure, error or skipped and the suite counts)."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from judge_helpers import EXPECTED, cli

from clusterbench.report import junit

xmlschema = pytest.importorskip("xmlschema", reason="xmlschema (test extra) validates against the JUnit XSD")
SCHEMA = xmlschema.XMLSchema(str(Path(__file__).parent / "data" / "schemas" / "junit-10.xsd"))
SYSFS = Path(__file__).parent / "data" / "sysfs"


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


def test_validate_junit_has_every_criterion_with_its_verdict(seed_db, capsys, tmp_path):  # noqa: F811
    out = tmp_path / "validate.xml"
    rc, _, err = cli(capsys, "validate", "seed=mi300x", "--profile", "amd-mi300x-oem", "--db", seed_db,
                     "--junit", str(out))
    assert rc == 1, err
    root = _read(out)
    cases = _cases(root)
    assert len(cases) == 19
    for name, (status, measured) in EXPECTED.items():
        c = cases[name]
        if status == "pass":   # no verdict element; the measured value in its output
            assert [e.tag for e in c] == ["system-out"]
            assert f"measured: {measured:.6g}" in c.find("system-out").text
        else:
            f = c.find("failure")
            assert f is not None and f.get("type") == "fail"
            # the measured value, the threshold and the evidence are in the failure
            assert "measured 48.349 GB/s" in f.get("message") and ">= 48.4 GB/s" in f.get("message")
            assert "source: Table 3 (Test 2" in f.text and "runs: " in f.text
    skipped = [n for n, c in cases.items() if c.find("skipped") is not None]
    assert skipped == ["no degraded GPU in BabelStream Triad"]
    assert root.get("failures") == "1" and root.find("testsuite").get("skipped") == "1"


def test_preflight_junit_fail_and_not_applicable(capsys, tmp_path):
    out = tmp_path / "pre.xml"
    log = tmp_path / "dmesg.txt"
    log.write_text("[  1.0] NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.\x1b[0m\n")
    rc, _, err = cli(capsys, "preflight", "--root", str(SYSFS / "h100-node"), "--kernel-log", str(log),
                     "--expect-gpus", "8", "--node", "gpu07", "--junit", str(out))
    assert rc == 1, err
    root = _read(out)
    suite = root.find("testsuite")
    assert suite.get("name") == "preflight gpu07" and suite.get("hostname") == "gpu07"
    cases = _cases(root)
    assert cases["gpu_count"].find("failure") is not None
    assert "expected 8" in cases["gpu_count"].find("failure").get("message")
    kl = cases["kernel_log"].find("failure")
    assert kl is not None and "Xid" in kl.text and "\ufffd" in kl.text   # ESC is not XML: replaced


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


def test_junit_into_a_missing_directory_is_one_line(seed_db, capsys, tmp_path):  # noqa: F811
    rc, _, err = cli(capsys, "validate", "seed=mi300x", "--profile", "amd-mi300x-oem", "--db", seed_db,
                     "--junit", str(tmp_path / "nope" / "x.xml"))
    assert rc == 2 and err.count("\n") == 1 and "does not exist" in err


def test_sweep_junit_one_case_per_node(capsys, tmp_path, monkeypatch):
    """The sweep's verdict per node (subset runs replaced by recorded values: n3 is slow)."""
    from clusterbench.sweep import run as sweep_run
    from clusterbench.sweep.analyze import SubsetResult

    def fake(cfg, hosts, stage, index):
        return SubsetResult(tuple(hosts), stage, 12.0 if "n3" in hosts else 24.0 + index % 2 * 0.2, "GB/s")

    monkeypatch.setattr(sweep_run, "run_subset", fake)
    out = tmp_path / "sweep.xml"
    rc, _, err = cli(capsys, "sweep", "--hosts", "n[1-4]", "--db", str(tmp_path / "s.db"), "--junit", str(out),
                     "--", "coll", "all_reduce")
    assert rc == 1, err
    root = _read(out)
    suite = root.find("testsuite")
    assert suite.get("name") == "sweep coll busbw" and suite.get("failures") == "1"
    cases = _cases(root)
    assert set(cases) == {"n1", "n2", "n3", "n4"}
    failure = cases["n3"].find("failure")
    assert "single score is an outlier" in failure.get("message")
    assert "single score: 12" in failure.text and "pair score: 12" in failure.text
    assert "single score: 24" in cases["n1"].find("system-out").text
