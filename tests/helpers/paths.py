"""Where things are, for tests in any folder of the tree."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent
SRC = ROOT / "src"
DATA = TESTS / "data"
HELPERS = TESTS / "helpers"
