"""A small transfer language, close to TransferBench's config lines.

One line is one test; all its transfers run at the same time. A transfer is ``SRC->EXE->DST``
(TransferBench's triple) or ``SRC->DST`` (the executor is then chosen: the copy engine of the GPU
involved, or the CPU of the source host node). Memory: ``G<i>`` GPU i, ``C<i>`` host memory on
NUMA node i (pinned when a GPU takes part), ``U<i>`` pageable host memory, ``N`` none (a
memset when it is the source, a read-only pass when it is the destination); several
destinations broadcast (``G0->G0->G0G1``). Executors: ``G<i>`` a copy kernel on GPU i, ``D<i>``
GPU i's copy engine, ``C<i>`` CPU threads (of NUMA node i).

Accepted line forms::

    G0->G1 G1->G0@2M                 # ours: transfers, optional @BYTES each
    1 4 (G0->G0->G1)                 # TransferBench: count, sub-executors, triples (--bytes each)
    -2 (G0 G0 G1 4 1M) (G1 G1 G0 8 2M)   # TransferBench advanced: (src exe dst subexecs bytes)

``#`` starts a comment; a comment line just before a test names it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from clusterbench.errors import UsageError
from clusterbench.units import parse_size

MEM_KINDS = "CUGNBF"   # B/F: TransferBench's fine-grained host/GPU memory, treated as C/G
EXE_KINDS = "GDC"
EXECUTOR_NAMES = {"G": "GFX", "D": "DMA", "C": "CPU"}
# TransferBench's sub-executors are a GPU's CUs (a few hundred) or a node's CPU threads: a count
# past this is a typo, and no store column holds an integer of 20 digits
MAX_SUBEXECS = 1 << 16


@dataclass(frozen=True)
class Mem:
    kind: str    # C, U, G or N
    index: int

    def __str__(self) -> str:
        return "N" if self.kind == "N" else f"{self.kind}{self.index}"

    @property
    def is_host(self) -> bool:
        return self.kind in ("C", "U")


@dataclass(frozen=True)
class Exe:
    kind: str    # G, D or C
    index: int
    # TransferBench's ``G0.3``: one chosen sub-executor (an XCC, a DMA engine); kept so that
    # the engine skips the test with the reason (PyTorch picks its own) rather than run another
    sub: int | None = None

    def __str__(self) -> str:
        return f"{self.kind}{self.index}" + (f".{self.sub}" if self.sub is not None else "")

    @property
    def name(self) -> str:
        return EXECUTOR_NAMES[self.kind]


@dataclass(frozen=True)
class Transfer:
    srcs: tuple[Mem, ...]
    exe: Exe
    dsts: tuple[Mem, ...]
    bytes: int
    subexecs: int = 0   # TransferBench CUs/threads; recorded, PyTorch picks its own launch shape

    @property
    def src(self) -> str:
        return "".join(str(m) for m in self.srcs) or "N"

    @property
    def dst(self) -> str:
        return "".join(str(m) for m in self.dsts) or "N"

    def __str__(self) -> str:
        return f"{self.src}->{self.exe}->{self.dst}"


@dataclass(frozen=True)
class Test:
    name: str
    transfers: tuple[Transfer, ...]


# ASCII digits only: \d and str.isdigit also take other scripts' digits (and "²", which int() refuses)
_MEM_RE = re.compile(r"([A-Za-z])([0-9]*)")


def parse_mems(text: str) -> tuple[Mem, ...]:
    """``G0G1`` -> (G0, G1); ``N`` / ``N0`` -> () (no memory)."""
    t = text.strip().upper()
    if not t or _MEM_RE.sub("", t):
        raise UsageError(f"invalid memory {text!r}: expected e.g. G0, C0, U0, G0G1 or N")
    out: list[Mem] = []
    for kind, idx in _MEM_RE.findall(t):
        if kind not in MEM_KINDS:
            raise UsageError(f"invalid memory type {kind!r} in {text!r}: expected C, U, G or N")
        if kind == "N":
            continue
        if not idx:
            raise UsageError(f"invalid memory {text!r}: {kind} needs an index, e.g. {kind}0")
        kind = {"B": "C", "F": "G"}.get(kind, kind)
        out.append(Mem(kind, int(idx)))
    return tuple(out)


def parse_exe(text: str) -> Exe:
    m = re.fullmatch(r"([A-Za-z])([0-9]+)(?:\.([0-9]+))?", text.strip())
    if not m or m.group(1).upper() not in EXE_KINDS:
        raise UsageError(f"invalid executor {text!r}: expected G<i> (GPU kernel), D<i> (copy engine) "
                         "or C<i> (CPU), optionally .<sub-index>")
    return Exe(m.group(1).upper(), int(m.group(2)), int(m.group(3)) if m.group(3) is not None else None)


def default_exe(srcs: tuple[Mem, ...], dsts: tuple[Mem, ...]) -> Exe:
    gpus = [m for m in srcs + dsts if m.kind == "G"]
    if gpus:
        return Exe("D", gpus[0].index)
    hosts = [m for m in srcs + dsts if m.is_host]
    return Exe("C", hosts[0].index if hosts else 0)


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _bytes(text: str, what: str) -> int:
    n = parse_size(text, what)
    if n <= 0 or n % 4:
        raise UsageError(f"invalid {what} {text!r}: must be a positive multiple of 4 bytes")
    return n


def _subexecs(text: str, where: str) -> int:
    """A sub-executor count (ASCII digits, checked by the caller) of at most MAX_SUBEXECS;
    ``where``: the line or transfer it is in, as the error names it."""
    n = int(text)
    if n > MAX_SUBEXECS:
        raise UsageError(f"invalid {where}: {text} sub-executors (CUs or CPU threads); at most {MAX_SUBEXECS}")
    return n


def parse_transfer(text: str, default_bytes: int, subexecs: int = 0) -> Transfer:
    body, _, size = text.partition("@")
    parts = [p for p in body.strip().split("->")]
    if len(parts) not in (2, 3) or not all(p.strip() for p in parts):
        raise UsageError(f"invalid transfer {text!r}: expected SRC->DST or SRC->EXE->DST")
    srcs, dsts = parse_mems(parts[0]), parse_mems(parts[-1])
    exe = parse_exe(parts[1]) if len(parts) == 3 else default_exe(srcs, dsts)
    return _checked(Transfer(srcs, exe, dsts, _bytes(size, "bytes") if size else default_bytes,
                             subexecs), text)


def _checked(t: Transfer, text: str) -> Transfer:
    if not t.srcs and not t.dsts:
        raise UsageError(f"invalid transfer {text!r}: source and destination cannot both be N")
    if len(t.srcs) > 1:
        raise UsageError(f"invalid transfer {text!r}: several sources (a reduction) are not "
                         "supported; write one transfer per source")
    return t


def parse_line(line: str, default_bytes: int, name: str) -> Test | None:
    """One test from one line, or None for a blank or comment line."""
    text = line.split("#", 1)[0].strip()
    if not text:
        return None
    first = text.split(None, 1)[0]
    if re.fullmatch(r"-?[0-9]+", first):
        return Test(name, _tb_line(text, default_bytes))
    transfers = tuple(parse_transfer(tok, default_bytes) for tok in re.split(r"[\s;,]+", text) if tok)
    return Test(name, transfers)


def _tb_line(text: str, default_bytes: int) -> tuple[Transfer, ...]:
    head, _, rest = text.partition("(")
    rest = "(" + rest if rest else ""
    nums = head.split()
    groups = re.findall(r"\(([^()]*)\)", rest)
    count = int(nums[0])
    if count == 0:
        raise UsageError(f"invalid test line {text!r}: the transfer count must not be 0")
    out: list[Transfer] = []
    if count > 0:  # simple form: N SUBEXECS (S->E->D)...
        if len(nums) != 2 or not _digits(nums[1]):
            raise UsageError(f"invalid test line {text!r}: expected 'N SUBEXECS (S->E->D) ...'")
        subexecs = _subexecs(nums[1], f"test line {text!r}")
        for g in groups:
            out.append(parse_transfer(g.replace(" ", ""), default_bytes, subexecs))
    else:  # advanced form: -N (SRC EXE DST SUBEXECS BYTES)...
        for g in groups:
            f = g.split()
            if len(f) != 5 or not _digits(f[3]):
                raise UsageError(f"invalid transfer ({g}): expected (SRC EXE DST SUBEXECS BYTES)")
            bytes_ = _bytes(f[4], "bytes") if f[4] != "0" else default_bytes
            out.append(_checked(Transfer(parse_mems(f[0]), parse_exe(f[1]), parse_mems(f[2]),
                                         bytes_, _subexecs(f[3], f"transfer ({g})")), g))
    if len(out) != abs(count):
        raise UsageError(f"invalid test line {text!r}: says {abs(count)} transfer(s), lists {len(out)}")
    return tuple(out)


def parse_text(text: str, default_bytes: int) -> list[Test]:
    """Every test in a config file's text; comment lines right before a test name it."""
    tests: list[Test] = []
    pending = ""
    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("#"):
            pending = stripped.lstrip("#").strip()
            continue
        if not stripped:
            pending = ""
            continue
        try:
            test = parse_line(line, default_bytes, pending or f"Test {len(tests) + 1}")
        except UsageError as e:
            raise UsageError(f"line {lineno}: {e}") from None
        if test is not None:
            tests.append(test)
        pending = ""
    if not tests:
        raise UsageError("no transfer tests found")
    return tests
