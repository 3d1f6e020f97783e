"""System tests (bounded inputs): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import subprocess
import sys

from child_cli import _runs
from paths import DATA

NCCL_LOG = DATA / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt"


def test_a_tag_that_is_not_utf8_is_refused(tmp_path):
    """Bytes from a Latin-1 terminal reach Python as surrogates; no database stores them."""
    db = tmp_path / "cb.db"
    p = subprocess.run([sys.executable.encode(), b"-m", b"clusterbench", b"import",
                        str(NCCL_LOG).encode(), b"--tag", b"site=z\xfcrich", b"--db", str(db).encode()],
                       capture_output=True, timeout=120)
    assert p.returncode == 2, p.stderr
    err = p.stderr.decode()
    assert err.startswith("clusterbench: error: invalid tag ") and "not UTF-8 text" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert _runs(db) == []
