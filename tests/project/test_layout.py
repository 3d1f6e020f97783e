"""The test tree mirrors the source tree, so the tests of a module are where one looks for them:
``src/clusterbench/a/b.py`` is tested in ``tests/a/test_b.py``, a package's ``__init__.py`` in
``tests/a/test_a.py``, a top-level module ``src/clusterbench/c.py`` in ``tests/test_c.py``.
Besides: ``tests/system/`` (whole commands, ranks, servers, namespaces), ``tests/project/`` (the
project as a whole: docs, packaging, this layout), ``tests/helpers/`` (shared helpers) and
``tests/data/`` (real tool logs)."""

from __future__ import annotations

import re

from paths import SRC, TESTS

PACKAGE = SRC / "clusterbench"
FREE = {"system", "project", "helpers", "data"}


def _test_files():
    for p in sorted(TESTS.rglob("test_*.py")):
        rel = p.relative_to(TESTS)
        if rel.parts[0] not in {"data", "helpers"}:
            yield rel


def _subject(rel) -> list:
    """Where the module a mirrored test file tests lives (a module file or a package folder)."""
    name = rel.stem[len("test_"):]
    folder = PACKAGE.joinpath(*rel.parts[:-1])
    own_package = rel.parts[:-1] and rel.parts[-2] == name
    return [folder / f"{name}.py", folder / name / "__init__.py"] + ([folder / "__init__.py"] if own_package else [])


def test_every_test_file_mirrors_a_module():
    orphans = [str(rel) for rel in _test_files()
               if rel.parts[0] not in FREE and not any(p.exists() for p in _subject(rel))]
    assert not orphans, "name each test file after the module it tests (tests/<package>/test_<module>.py)"


def test_every_package_has_its_tests_in_its_folder():
    packages = sorted(p.parent.relative_to(PACKAGE) for p in PACKAGE.rglob("__init__.py")
                      if p.parent != PACKAGE and "__pycache__" not in p.parts)
    tops = {p.parts[0] for p in packages}
    missing = [t for t in sorted(tops) if not any((TESTS / t).rglob("test_*.py"))]
    assert not missing


def test_no_test_file_is_named_after_when_it_was_written():
    bad = [str(rel) for rel in _test_files()
           if re.search(r"(probe|review|leftovers)|_(b|new)$", rel.stem)]
    assert not bad


def test_every_test_folder_is_a_package():
    """Every folder of the tree is a package (``__init__.py``), so two test files may share a
    name in different folders (tests/ingest/test_common.py, tests/launch/test_common.py)."""
    folders = {p.parent for p in TESTS.rglob("test_*.py")} - {TESTS}
    missing = [str(f.relative_to(TESTS)) for f in sorted(folders) if not (f / "__init__.py").exists()]
    assert not missing
