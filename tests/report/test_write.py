"""report.write: the report command's page, summary and plots, from the runs read from the
database, written all at once or not at all."""

from pathlib import Path

import pytest

from clusterbench.errors import UsageError
from clusterbench.records import FAILED, Measurement, Run
from clusterbench.report.write import page_path, write_report
from clusterbench.store import Store


def _save(db, value, status="complete", ms=True, tag="a"):
    rows = [Measurement("stream", "bandwidth", value, "GB/s", {"kernel": k, "array_size": 1 << 25,
                                                              "dtype": "double", "stat": "min"})
            for k in ("Copy", "Triad")] if ms else []
    with Store.open(db) as s:
        return s.save_run(Run("stream", hosts=["h1"], status=status, tags={"grp": tag}), rows)


def test_page_path():
    assert page_path("r.html") == Path("r.html") and page_path("r.HTM") == Path("r.HTM")
    assert page_path("nightly") == Path("nightly.html") and page_path("a.b") == Path("a.b.html")
    for bad in ("", ".", "dir/.."):
        with pytest.raises(UsageError, match="give the HTML file's name"):
            page_path(bad)
    with pytest.raises(UsageError):
        page_path("/dev/null")


def test_two_groups_written_with_their_plots(db, tmp_path):
    _save(db, 100.0, tag="a")
    _save(db, 90.0, tag="b")
    warned: list[str] = []
    done = write_report(db, ["grp=a", "grp=b"], str(tmp_path / "r"), adjust_by="fdr", warn=warned.append)
    assert done.html == tmp_path / "r.html" and done.markdown == tmp_path / "r.md"
    assert done.html.read_text().startswith("<!") and "clusterbench report: grp=a, grp=b" in done.markdown.read_text()
    assert done.run_ids == [1, 2] and len(done.groups) == 2
    assert done.figures > 0 and all(Path(p).parent == done.plot_dir for p in done.plots)
    assert done.figures_skipped == [] and warned == []


def test_runs_without_anything_to_report_write_nothing(db, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    _save(db, 0.0, ms=False)
    with pytest.raises(UsageError, match="no measurements to report"):
        write_report(db, ["1"], str(out / "r.html"), adjust_by="fdr")
    assert list(out.iterdir()) == []
    # a failed run is reported all the same: its status is what the reader needs
    _save(db, 0.0, status=FAILED, ms=False)
    done = write_report(db, ["2"], str(out / "r.html"), adjust_by="fdr")
    assert done.findings.verdict().status != "pass" and done.html.exists()
