"""System tests (launch injection): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import os
from pathlib import Path

from fake_ssh import PAYLOADS, _bash


def test_no_marker_left():
    assert not os.path.exists("/tmp/cb6-evil")


def test_the_harness_sees_an_injection(tmp_path: Path, fakes: dict[str, str]) -> None:
    """The checks above can fail: unquoted text with a payload does touch the marker."""
    marker = tmp_path / "P"
    naive = {"subst": "t={}", "backquote": "t={}", "semicolon": "t={}",
             "squote": "'t={}'", "dquote": '"t={}"'}   # how a string-formatting generator would write it
    for name, form in naive.items():
        _bash("srun clusterbench coll --tag " + form.format(PAYLOADS[name].format(m=marker)), fakes, tmp_path)
        assert marker.exists(), name
        marker.unlink()
