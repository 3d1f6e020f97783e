"""Document roles undone in bulk (ingest.common._plain_roles) give what the per-role path gives.

A log quoted in a document (``:mark:`...``` around each line, wrapped where the page was
narrow) is read by a few passes over the whole block where that is the same as undoing each
role on its own; anything it cannot do alike (escapes or bold on a role's line, whitespace or a
launcher prefix at a wrap, a stray backtick, a role left open) goes the per-role way. These
tests compare the two on generated documents and random text, cut into blocks anywhere.
"""

from __future__ import annotations

import random

import pytest

from clusterbench.ingest import common
from clusterbench.ingest.common import Roles
from clusterbench.printable import _UNSAFE, printable

LOG_LINES = [
    "# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20",
    "#",
    "# Rank 0 Pid 806883 on SMC-SC-DC19-06 device 0 [0000:05:00.0] AMD Instinct MI300X",
    "# size count type redop root time algbw busbw #wrong time algbw busbw #wrong",
    "8 2 float sum -1 34.13 0.00 0.00 0 39.55 0.00 0.00 0",
    "8589934592 2147483648 float sum -1 47488 180.88 316.55 0 47594 180.48 315.84 0",
    "# Avg bus bandwidth : 70.742",
    "rccl-tests: Version develop:ae3e635",
    "> mpirun -np 16 \\",
    "a | b \\| c \\\\ d \\* e **bold** f",
    "[1,0]<stdout>: # Rank 1 Pid 2 on h device 1 [0x00] A100",
    "12: 2024-01-01 10:00:00 x",
]
# what a wrap may put at the start of the next source line, and after a closing backtick
WRAP_STARTS = ["", "", "", " ", "\t", "[1,0]<stdout>:", "(h, rank=1, pid=2) ", "12: ", "2024-01-01 10:00:00 ",
               "2(factor) ", "\xa0"]
AFTERS = ["", "", "", "", " ", "\t", " text", " :mark:`more`", " `", "**x**", "\\|"]


def _document(rng: random.Random) -> str:
    out: list[str] = []
    for _ in range(rng.randint(1, 25)):
        line = rng.choice(LOG_LINES)
        if rng.random() < 0.2:
            out.append(line)
        else:
            words = line.split(" ")
            while rng.random() < 0.4 and len(words) > 1:   # the page wrapped the role
                k = rng.randrange(1, len(words))
                words[k] = "\n" + rng.choice(WRAP_STARTS) + words[k]
            before = rng.choice(["", "", "", "see ", "` "])
            out.append(f"{before}:mark:`{' '.join(words)}`{rng.choice(AFTERS)}")
        if rng.random() < 0.7:
            out.append("")
    return "\n".join(out) + "\n"


def _random_text(rng: random.Random) -> str:
    atoms = [":mark:`", "`", "\n", "\n", " ", "\t", "**", "\\|", "\\", "[1,0]<stdout>:", "12: ", "x", "AMD",
             ":mark:`a`", ":mark:`AMD\nInstinct`", "\x00", "\xa0"]
    return "".join(rng.choice(atoms) for _ in range(rng.randint(1, 40))) + "\n"


def _blocks(rng: random.Random, text: str) -> list[str]:
    """``text`` cut into blocks of whole lines, as text_chunks hands them over."""
    lines = text.split("\n")[:-1]
    cuts = sorted(rng.sample(range(1, len(lines)), min(rng.randint(0, 3), len(lines) - 1))) if len(lines) > 1 else []
    bounds = [0, *cuts, len(lines)]
    return ["".join(ln + "\n" for ln in lines[a:b]) for a, b in zip(bounds, bounds[1:])]


def _undone(blocks: list[str], bulk: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], bool]:
    with monkeypatch.context() as m:
        if not bulk:
            m.setattr(common, "_plain_roles", lambda text: None)
        roles = Roles()
        out = [roles.feed(b) for b in blocks]
        out.append(roles.rest())
        return out, roles.open_at_end


@pytest.mark.parametrize("make", [_document, _random_text])
def test_bulk_and_per_role_agree(make, monkeypatch):
    rng = random.Random(20261126)
    bulk_taken = 0
    for _ in range(3000):
        blocks = _blocks(rng, make(rng))
        bulk_taken += any(common._plain_roles(b) is not None for b in blocks if ":mark:`" in b)
        assert _undone(blocks, True, monkeypatch) == _undone(blocks, False, monkeypatch), blocks
    assert bulk_taken > 200, bulk_taken   # the bulk path was exercised, not only refused


def test_bulk_path_takes_a_quoted_log_and_refuses_what_it_cannot_do():
    quoted = ":mark:`# Rank 0 Pid 1 on h device 0 [0000:05:00.0] AMD\nInstinct MI300X`\n\n:mark:`8 2 float`\n"
    assert common._plain_roles(quoted) == "# Rank 0 Pid 1 on h device 0 [0000:05:00.0] AMD Instinct MI300X\n\n8 2 float\n"
    for text in (":mark:`a \\| b`\n",            # an escape on a role's line
                 ":mark:`a` **b**\n",            # bold on a role's line
                 ":mark:`a\n  b`\n",             # whitespace at the wrap: strip() takes it off
                 ":mark:`a\n[1,0]<stdout>:b`\n",  # a launcher prefix where the role wrapped
                 ":mark:`a\nb` \n",              # whitespace after the wrapped role's end
                 ":mark:`a` `\n",                # a stray backtick
                 ":mark:`a\n"):                  # open at the block's end
        assert common._plain_roles(text) is None, text
    # an escape on a line without a role is the log's own, and stays
    assert common._plain_roles("> mpirun \\\n:mark:`x`\n") == "> mpirun \\\nx\n"


def test_printable_shortcut_covers_every_unsafe_character():
    """printable returns a str.isprintable() text as it is: no character it escapes is printable."""
    unsafe = [c for c in map(chr, range(0x3000)) if _UNSAFE.match(c)] + [chr(c) for c in range(0xD800, 0xE000)]
    assert not [c for c in unsafe if c.isprintable()]
    assert printable("a\u202eb") == "a\\u202eb" and printable("plain text") == "plain text"
