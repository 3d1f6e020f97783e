"""Tests of clusterbench.report.outfile."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from clusterbench.errors import UsageError
from clusterbench.report.outfile import MANIFEST, Outputs


def _write(directory: Path, names: list[str], make: bool = True) -> None:
    with Outputs() as files:
        files.directory(directory, make=make)
        for name in names:
            files.add(directory / name, lambda tmp, n=name: tmp.write_text(n))


def _listed(directory: Path) -> list[str]:
    return json.loads((directory / MANIFEST).read_text())["files"]


def test_files_the_last_write_made_and_this_one_did_not_are_removed(capsys, tmp_path):
    d = tmp_path / "r_plots"
    _write(d, ["a.png", "a.svg", "b.png", "b.svg"])
    (d / "mine.txt").write_text("notes")
    _write(d, ["a.png", "a.svg"])
    assert sorted(p.name for p in d.iterdir()) == [MANIFEST, "a.png", "a.svg", "mine.txt"]
    assert _listed(d) == ["a.png", "a.svg"] and capsys.readouterr().err == ""


def test_no_file_written_removes_the_old_ones_and_the_list_but_not_the_folder(tmp_path):
    d = tmp_path / "r_plots"
    _write(d, ["a.png"])
    (d / "mine.txt").write_text("notes")
    _write(d, [], make=False)
    assert sorted(p.name for p in d.iterdir()) == ["mine.txt"]
    _write(tmp_path / "never_plots", [], make=False)   # no folder: none is made
    assert not (tmp_path / "never_plots").exists()


def test_a_failed_write_leaves_the_old_files(tmp_path):
    d = tmp_path / "r_plots"
    _write(d, ["a.png", "b.png"])
    with pytest.raises(UsageError), Outputs() as files:
        files.directory(d)
        files.add(d / "a.png", lambda tmp: tmp.write_text("new"))
        raise UsageError("the report failed")
    assert sorted(p.name for p in d.iterdir()) == [MANIFEST, "a.png", "b.png"]
    assert (d / "a.png").read_text() == "a.png"


def test_a_link_put_where_an_old_plot_was_is_left_and_not_followed(capsys, tmp_path):
    d, outside = tmp_path / "r_plots", tmp_path / "precious.png"
    _write(d, ["a.png", "b.png"])
    outside.write_text("keep")
    (d / "b.png").unlink()
    (d / "b.png").symlink_to(outside)
    _write(d, ["a.png"])
    assert outside.read_text() == "keep" and (d / "b.png").is_symlink()
    err = capsys.readouterr().err
    assert err == f"clusterbench: warning: old file {d}/b.png not removed: it is no longer a regular file\n"


def test_a_list_naming_files_outside_the_folder_removes_none_of_them(tmp_path):
    d = tmp_path / "r_plots"
    d.mkdir()
    victim, sub = tmp_path / "victim.png", d / "sub"
    victim.write_text("keep")
    sub.mkdir()
    (sub / "x.png").write_text("keep")
    names = ["../victim.png", str(victim), "sub/x.png", "sub", ".", "..", "", ".hidden", 7, None]
    (d / MANIFEST).write_text(json.dumps({"written_by": "clusterbench", "files": names}))
    (d / ".hidden").write_text("keep")
    _write(d, ["a.png"])
    assert victim.read_text() == "keep" and (sub / "x.png").read_text() == "keep"
    assert (d / ".hidden").exists() and _listed(d) == ["a.png"]


@pytest.mark.parametrize("what", ["link", "not ours"])
def test_a_list_clusterbench_did_not_write_is_neither_trusted_nor_replaced(capsys, tmp_path, what):
    d, elsewhere = tmp_path / "r_plots", tmp_path / "list.json"
    d.mkdir()
    (d / "old.png").write_text("keep")
    elsewhere.write_text(json.dumps({"written_by": "clusterbench", "files": ["old.png"]}))
    if what == "link":
        (d / MANIFEST).symlink_to(elsewhere)
    else:
        (d / MANIFEST).write_text("my own notes\n")
    before = (d / MANIFEST).read_text()
    _write(d, ["a.png"])
    assert (d / "old.png").read_text() == "keep" and (d / MANIFEST).read_text() == before
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("clusterbench: warning: old files in") and str(d) in err


def test_a_file_that_cannot_be_removed_is_a_warning_and_is_tried_again(capsys, tmp_path, monkeypatch):
    d = tmp_path / "r_plots"
    _write(d, ["a.png", "b.png"])
    real_unlink = os.unlink

    def refuse_b(path, *args, **kw):
        if str(path) == "b.png":
            raise PermissionError(13, "Permission denied")
        return real_unlink(path, *args, **kw)

    monkeypatch.setattr(os, "unlink", refuse_b)
    _write(d, ["a.png"])
    err = capsys.readouterr().err
    assert err == f"clusterbench: warning: old file {d}/b.png not removed: Permission denied\n"
    assert (d / "b.png").exists() and _listed(d) == ["a.png", "b.png"]
    monkeypatch.setattr(os, "unlink", real_unlink)
    _write(d, ["a.png"])
    assert not (d / "b.png").exists() and _listed(d) == ["a.png"]


def test_a_plots_folder_that_is_a_link_is_tidied_where_the_plots_went(tmp_path):
    real, d = tmp_path / "store", tmp_path / "r_plots"
    real.mkdir()
    d.symlink_to(real)
    _write(d, ["a.png", "b.png"])
    (real / "mine.txt").write_text("notes")
    _write(d, ["b.png"])
    assert sorted(p.name for p in real.iterdir()) == [MANIFEST, "b.png", "mine.txt"] and d.is_symlink()
