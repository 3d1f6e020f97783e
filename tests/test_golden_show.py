"""`results show` reprints runs stored by earlier versions byte for byte.

``data/golden/pre-redesign.db`` holds runs made before the package redesign (collectives,
stream, gemm, transfer, workloads, net, and imports of the standard tools' logs);
``show-N.txt`` is what ``results show N`` printed then. A change to how tables are rendered
from records shows up here as a diff.
"""

import shutil
from pathlib import Path

import pytest

from clusterbench.cli import main

GOLDEN = Path(__file__).parent / "data" / "golden"
RUNS = sorted(int(p.stem.split("-")[1]) for p in GOLDEN.glob("show-*.txt"))


@pytest.fixture(scope="module")
def old_db(tmp_path_factory):
    # a copy: opening applies newer migrations, and the fixture must stay as it was made
    path = tmp_path_factory.mktemp("golden") / "old.db"
    shutil.copy(GOLDEN / "pre-redesign.db", path)
    return str(path)


def test_fixture_covers_every_table_family():
    assert len(RUNS) >= 20


@pytest.mark.parametrize("run_id", RUNS)
def test_results_show_is_unchanged(capsys, old_db, run_id):
    with pytest.raises(SystemExit) as e:
        main(["results", "show", str(run_id), "--db", old_db])
    assert e.value.code == 0
    want = (GOLDEN / f"show-{run_id}.txt").read_text()
    assert capsys.readouterr().out == want
