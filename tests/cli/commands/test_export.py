"""Tests of clusterbench.cli.commands.export: ``clusterbench export openmetrics``."""

from __future__ import annotations

import json
import os
import re
import stat

import pytest
from fleet_helpers import night, real_measurements
from fleet_metrics import (
    BUSBW,
    DASHBOARD,
    LOGS,
    TRIAD,
    _dashboard_queries,
    _families,
    _fleet,
    _text_families,
    _value,
)
from judge_helpers import cli, run_cli, save
from prom_format import prom_parser
from special_files import _is, _special
from stored_runs import _ok, _one_line, _store

from clusterbench.records import Measurement
from clusterbench.report import openmetrics

prom_om = pytest.importorskip("prometheus_client.openmetrics.parser", reason="prometheus-client (the metrics extra)")


TRANSFER = "clusterbench_transfer_bandwidth_bytes_per_second"


def _om_families(text: str) -> dict[str, list]:
    return {f.name: f.samples for f in prom_om.text_string_to_metric_families(text)}


def test_openmetrics_uses_its_float_syntax(extreme_db):
    rc, out, err = run_cli("export", "openmetrics", "--db", extreme_db)
    _ok(rc, out, err)
    samples = [line.rsplit(" ", 1)[1] for line in out.splitlines() if line and not line.startswith("#")]
    assert samples
    for text in samples:
        assert re.fullmatch(r"[+-]Inf|NaN|-?\d+(\.\d+)?(e[+-]\d+)?", text), text
    assert "-0.0" in samples and "+Inf" in samples


def test_export_is_the_latest_state_in_base_units(capsys, db):
    _fleet(db)
    rc, out, err = cli(capsys, "export", "openmetrics", "--profile", "amd-mi300x-oem", "--db", db)
    assert rc == 0, err
    fams = _families(out)
    a3 = {m.params["placement"]: m.value for m in real_measurements(LOGS[0])
          if m.metric == "busbw" and m.params["bytes"] == 8589934592}
    busbw = fams[BUSBW]
    assert _value(busbw, host="gpu01", bytes="8589934592", placement="in") == pytest.approx(a3["in"] * 1e9)
    # the second night replaced the first: gpu02 shows the low value
    assert _value(busbw, host="gpu02", bytes="8589934592", placement="in") == pytest.approx(a3["in"] * 0.5e9)
    triad = {s.labels["device"]: s.value for s in fams[TRIAD] if s.labels["kernel"] == "Triad"
             and s.labels["host"] == "gpu01"}
    assert set(triad) == {"0", "1"} and triad["1"] < 0.6 * triad["0"]
    assert "clusterbench_gemm_flop_per_second" in fams
    crit = fams[openmetrics.CRITERION]
    assert _value(crit, host="gpu02", criterion="RCCL all_reduce in-place busbw at 8 GiB") == 0.0
    assert _value(crit, host="gpu01", criterion="RCCL all_reduce in-place busbw at 8 GiB") == 1.0
    assert _value(crit, host="gpu01", criterion="BabelStream Triad") == 0.0
    assert not [s for s in crit if s.labels["criterion"] == "no degraded GPU in BabelStream Triad"]  # skipped
    pre = fams[openmetrics.PREFLIGHT]
    assert _value(pre, host="gpu03", check="gpu_count") == 0.0 and _value(pre, host="gpu03", check="pcie_link") == 1.0
    ts = fams[openmetrics.TIMESTAMP]
    assert _value(ts, host="gpu01", benchmark="import") == pytest.approx(1740798000 + 86400)
    # names: prefix, base unit at the end, no counter suffix; labels snake_case
    for name in fams:
        assert name.startswith("clusterbench_") and not name.endswith("_total")
    for s in fams["clusterbench_gemm_flop_per_second"]:
        assert "trans_a" in s.labels and "transA" not in s.labels


def test_selectors_and_since_choose_the_runs(capsys, db):
    _fleet(db)
    rc, out, _ = cli(capsys, "export", "openmetrics", "--since", night(1)[:10], "--db", db)
    busbw = _families(out)[BUSBW]
    assert {s.labels["host"] for s in busbw} == {"gpu01", "gpu02", "gpu03"}
    rc, out, _ = cli(capsys, "export", "openmetrics", "node=gpu01", "--db", db)
    assert {s.labels["host"] for s in _families(out)[BUSBW]} == {"gpu01"}
    rc, out, err = cli(capsys, "export", "openmetrics", "node=nosuch", "--db", db)
    assert rc == 2 and err.count("\n") == 1


def test_dashboard_parses_and_queries_only_exported_metrics(capsys, db):
    dash = json.loads(DASHBOARD.read_text())
    assert dash["panels"] and all(p["targets"] for p in dash["panels"])
    titles = " ".join(p["title"] for p in dash["panels"])
    for what in ("busbw per node", "STREAM Triad per GPU", "Failed criteria", "Trend of the 5 worst"):
        assert what in titles
    _fleet(db)
    rc, out, _ = cli(capsys, "export", "openmetrics", "--profile", "amd-mi300x-oem", "--db", db)
    labels: dict[str, set[str]] = {}
    for fam in prom_parser.text_string_to_metric_families(out):
        for s in fam.samples:
            labels.setdefault(s.name, set()).update(s.labels)
    exported = openmetrics.exported_names()
    for expr in _dashboard_queries():
        for name, selector in re.findall(r"(clusterbench_[a-z0-9_]+)(\{[^}]*\})?", expr):
            assert name in exported, (name, expr)
            if name == openmetrics.EXPORT_OK:
                continue
            assert name in labels, f"{name} is not in an export of real logs"
            for label in re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", selector):
                assert label in labels[name], (label, name)


def test_export_ends_with_eof_and_both_parsers_read_it(capsys, db):
    _store(db, [{"bytes": 8, "dtype": "float", "note": 'a "q"\\b\nc'}])
    rc, out, err = cli(capsys, "export", "openmetrics", "--db", db)
    assert rc == 0, err
    assert out.endswith("\n# EOF\n") and out.count("# EOF") == 1
    (om,) = _om_families(out)[BUSBW]
    (text,) = _text_families(out)[BUSBW]
    assert om.labels == text.labels and om.labels["note"] == 'a "q"\\b\nc' and om.value == 10e9


def test_export_of_nothing_is_eof_alone(capsys, db):
    _store(db, [{"bytes": 8}])
    rc, out, err = cli(capsys, "export", "openmetrics", "--since", "2099-01-01", "--db", db)
    assert rc == 0, err
    assert out == "# EOF\n"
    assert _om_families(out) == {} and _text_families(out) == {}


def test_rows_that_differ_only_in_rank_are_series_of_their_own(capsys, db):
    base = {"test": "p2p", "bytes": 1024, "executor": "G0", "method": "gpu", "stat": "executor"}
    _store(db, [{**base, "rank": 0}, {**base, "rank": 1}], benchmark="transfer", metric="bandwidth",
           hosts=("gpu01", "gpu02"))
    rc, out, err = cli(capsys, "export", "openmetrics", "--db", db)
    assert rc == 0, err
    samples = _text_families(out)[TRANSFER]
    got = sorted((s.labels["host"], s.labels["rank"], s.value) for s in samples)
    assert got == [("gpu01", "0", 10e9), ("gpu01", "1", 20e9), ("gpu02", "0", 10e9), ("gpu02", "1", 20e9)]
    series = [tuple(sorted(s.labels.items())) for s in samples]
    assert len(series) == len(set(series))


@pytest.mark.parametrize("kind", ["device", "fifo"])
@pytest.mark.parametrize("link", [False, True], ids=["path", "link"])
def test_openmetrics_never_replaces_a_device_or_fifo(capsys, stored, tmp_path, kind, link):
    special = tmp_path / "special"
    _special(special, kind)
    out = tmp_path / "m.prom"
    if link:
        out.symlink_to(special)
    _one_line(*cli(capsys, "export", "openmetrics", "--db", stored, "-o", str(out if link else special)),
              out if link else special, "not a regular file")
    assert _is(special, kind) and (not link or out.is_symlink())
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["special", "results.db", *(["m.prom"] if link else [])])


def test_openmetrics_writes_through_a_symlink_and_keeps_the_mode(capsys, stored, tmp_path):
    real = tmp_path / "real.prom"
    real.write_text("old\n")
    real.chmod(0o640)
    link = tmp_path / "m.prom"
    link.symlink_to(real)
    rc, _, err = cli(capsys, "export", "openmetrics", "--db", stored, "-o", str(link))
    assert rc == 0, err
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert "clusterbench_" in real.read_text() and stat.S_IMODE(real.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.prom", "real.prom", "results.db"]


def test_openmetrics_into_proc_is_one_line(capsys, stored):
    _one_line(*cli(capsys, "export", "openmetrics", "--db", stored, "-o", "/proc/clusterbench-test.prom"),
              "/proc/clusterbench-test.prom")


def test_a_cpu_host_gets_no_criterion_gauge_from_a_profile_for_other_hardware(capsys, db):
    """serve-metrics --profile amd-mi300x-oem exported clusterbench_criterion_passed{...} 0 for a
    CPU host: in a mixed fleet a false alert on every node that is no MI300X."""
    ms = [Measurement("stream", "bandwidth", 21.0, "GB/s", {"kernel": k, "array_size": 1 << 25, "dtype": "double",
                                                           "device": "cpu"}) for k in ("Copy", "Triad")]
    save(db, ms, benchmark="stream", hosts=["vm"], ranks=1, devices=["AMD EPYC"],
         meta={"device_type": "cpu", "device_names": {"cpu": "AMD EPYC"}})
    rc, out, err = cli(capsys, "export", "openmetrics", "--profile", "amd-mi300x-oem", "--db", db)
    assert rc == 0, err
    fams = _families(out)
    assert TRIAD in fams and openmetrics.CRITERION not in fams
    # the profile for CPUs judges it: a gauge of 1
    rc, out, _ = cli(capsys, "export", "openmetrics", "--profile", "cpu-smoke", "--db", db)
    assert _value(_families(out)[openmetrics.CRITERION], host="vm", criterion="stream Triad floor") == 1.0
