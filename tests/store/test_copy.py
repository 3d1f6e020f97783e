"""Tests of clusterbench.store.copy."""

from __future__ import annotations

import pytest
from stored_runs import _edit, _source

from clusterbench.store.copy import copy_databases


@pytest.mark.parametrize("sql", [
    "UPDATE measurement_packs SET body='not json'",
    "UPDATE runs SET meta='{'",
])
def test_a_copy_that_copies_nothing_makes_no_destination(tmp_path, sql):
    src = _source(tmp_path / "src.db", runs=1)
    _edit(src, sql)
    dest = tmp_path / "dest.db"
    with pytest.raises(Exception, match="run 1") as e:
        copy_databases(src, dest)
    assert type(e.value).__name__ == "StoreError"
    assert not list(tmp_path.glob("dest.db*"))
