"""What every log importer shares: the result type, line cleaning and number parsing.

Logs reach us through terminals, launchers, issue trackers and documents, so before a parser
sees a line we undo what those do to it: the prefixes launchers and log collectors put before
every line (Open MPI ``--tag-output`` ``[1,0]<stdout>:``, SkyPilot ``(head, rank=0, pid=N)``,
srun ``--label`` ``0: `` / `` 0: ``, ``kubectl logs --prefix`` ``[pod/NAME/CONTAINER]``,
timestamps, and pdsh's ``host: `` when every line has one), terminal colour codes, carriage
returns, and the reStructuredText markup of documents that quote tool output (``:mark:`...```
roles wrapped across source lines, ``\\|`` escapes, ``**bold**``).

A prefix is only taken off where it cannot be data: a table row starts with a number but never
with ``<number>: ``, and pdsh's free-form ``host: `` is removed only when nearly every line of the
log's start carries one (so ``Version: 4.0`` in a BabelStream banner stays), or in a log of
two to four lines, when every line carries the same one and it is a host's name (``_host_prefixes``).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from clusterbench.errors import UsageError
from clusterbench.printable import not_utf8
from clusterbench.records import COMPLETE, INCOMPLETE, WARNINGS, Measurement, Run
from clusterbench.store.packs import TABLE, Pack, Packs, measurements_of, number, pack_measurements
from clusterbench.units import is_time_unit

IMPORT_BENCHMARK = "import"
# What some editors write first; not part of the log. iter_runs drops it before the first line,
# the cleaners at the start of every line: a log saved with one and appended to another has it
# in the middle, where it hid the second log's first line (its '# nThread' header) from parsers.
BOM = "\ufeff"
MAX_ERROR_LINES = 100  # a crash can print the same failure from every rank; keep the run small


class LogFormatError(UsageError):
    """The text is not a log this importer understands (unknown tool, no results, junk)."""


class ImportedRun:
    """One run found in a log: the run record and its measurements.

    Parsers give either the measurements or, for runs of millions of records, ``Packs`` (the
    store's packed form, store/packs.py): then ``store_rows`` hands them to
    ``Store.save_run_rows`` as they are, and Measurement objects are built only if asked for.
    """

    def __init__(self, run: Run, measurements: list[Measurement] | None = None,
                 packs: Packs | None = None, benchmark: str | None = None) -> None:
        # every importer's records pass here: the one place a figure no tool measures is dropped
        dropped = False
        if measurements:
            kept = _without_negatives(run, measurements)
            dropped, measurements = kept is not measurements, kept
        if packs is not None:
            checked = packs.packs
            for i, pack in enumerate(packs.packs):
                if _may_be_negative(pack):   # memchr: most packs hold none (a Python step per pack of a large log)
                    kept = _pack_without_negatives(run, pack)
                    if kept is not pack:
                        checked = checked[:] if checked is packs.packs else checked
                        checked[i] = kept
            if checked is not packs.packs:
                dropped, packs = True, Packs(checked)
        if dropped and not (measurements or packs) and run.status == COMPLETE:
            run.status = INCOMPLETE   # every figure it printed was dropped
        self.run = run
        self._measurements = measurements if measurements is not None or packs is not None else []
        self._packs = packs
        self._benchmark = benchmark  # the one benchmark of a packed run

    @property
    def measurements(self) -> list[Measurement]:
        if self._measurements is None:
            assert self._packs is not None
            self._measurements = [m for p in self._packs.packs for m in measurements_of(p.format, p.body)]
        return self._measurements

    def __len__(self) -> int:
        return len(self._measurements) if self._measurements is not None else len(self._packs or ())

    def benchmarks(self) -> list[str]:
        """The benchmark names of the records, without building them."""
        if self._measurements is None:
            if self._benchmark is None and self._packs is not None:   # packs that say what they hold
                return sorted({b for p in self._packs.packs if p.count for b in p.benchmarks})
            return [self._benchmark] if self._benchmark and len(self) else []
        return sorted({m.benchmark for m in self.measurements})

    def not_finite(self) -> Measurement | None:
        """The first record whose value the store refuses (an infinite one: ``Measurement``
        refuses NaN and integers no float holds); packs hold only finite values (``number`` and
        ``pack_rows`` see to it)."""
        return next((m for m in self._measurements or () if not math.isfinite(m.value)), None)

    def store_rows(self) -> Packs:
        """The records for ``Store.save_run_rows``."""
        if self._measurements is None and self._packs is not None:
            return self._packs
        return Packs([pack_measurements(self.measurements)])


# Units of figures that are never below zero: times and rates (bandwidth, throughput, message
# and request rates). A tool that prints such a figure below zero printed no measurement (a
# clock gone backwards, an overflow, an edited log), so it is dropped with a warning. Other
# units keep their sign: iperf3 counts packets that arrive out of order as lost, so its loss
# can be negative; counts, errors, ratios and deltas may be too.
def never_negative(unit: str) -> bool:
    """Whether a value in ``unit`` (a time or a rate) below zero is no measurement."""
    return unit.endswith("/s") or unit == "Mpps" or is_time_unit(unit)


def _negative_note(benchmark: str, metric: str, value: float, unit: str) -> str:
    return f"{benchmark} {metric} {value:g} {unit} not stored: a time or rate below zero is no measurement"


def _dropped(m: Measurement) -> bool:
    # (an infinite value is a parser's defect, refused as such: iter_runs' not_finite)
    return -math.inf < m.value < 0 and never_negative(m.unit)


def _without_negatives(run: Run, ms: list[Measurement]) -> list[Measurement]:
    """``ms`` without the values below zero of a time or rate, each named in a warning."""
    if not any(m.value < 0 for m in ms):
        return ms
    kept = []
    for m in ms:
        if _dropped(m):
            add_warning(run, _negative_note(m.benchmark, m.metric, m.value, m.unit))
        else:
            kept.append(m)
    return kept if len(kept) < len(ms) else ms


# In a ``table`` pack's rows: a token that may be a number below zero. nccl-tests prints a root
# of -1 on every row of most ops, which this passes over; a time or bandwidth it printed below
# zero has decimals (-1.50: its formats are %.2f, %.1f, %.0f only from 10000 up), so a bare -1
# in those columns, which no build prints, is not looked for. A search led by one literal
# character runs near memory speed (about 1% of a 200 MB log's import); a match (also the
# exponent of 1e-07) is only looked at more closely.
_MINUS = re.compile(r"-[^1\s]|-1\S")


def _may_be_negative(pack: Pack) -> bool:
    """Whether a pack may hold a value below zero: a minus among a rows pack's values (after
    ``"r":``; its params hold the root of -1 of most collectives), anywhere in a table's rows."""
    if pack.format == TABLE:
        return "-" in pack.body
    at = pack.body.rfind('"r":')
    return "-" in pack.body[at:] if at >= 0 else "-" in pack.body


def _pack_without_negatives(run: Run, pack: Pack) -> Pack:
    """``pack`` without the values below zero of a time or rate (``_without_negatives``)."""
    body = pack.body
    if pack.format != TABLE:
        ms = list(measurements_of(pack.format, body))
        kept = _without_negatives(run, ms)
        return pack if kept is ms else pack_measurements(kept)
    start = body.find("\n") + 1
    m = _MINUS.search(body, start) if start else None
    if m is None:
        return pack
    return _table_without_negatives(run, pack, m.start())


def _table_without_negatives(run: Run, pack: Pack, at: int) -> Pack:
    """A ``table`` pack with each value below zero of a time or rate written ``N/A`` (a token
    that is no number, so no record), from the row holding offset ``at`` on."""
    body = pack.body
    head = json.loads(body[:body.find("\n")])
    nlead = len(head["lead"])
    cols = [c if c and never_negative(c[1]) else None for c in head["cols"]]
    out: list[str] = []
    done = line = body.rfind("\n", 0, at) + 1
    dropped = 0
    out.append(body[:line])
    while line < len(body):
        end = body.find("\n", line)
        end = len(body) if end < 0 else end
        toks = body[line:end].split()
        before = dropped
        for i, col in enumerate(cols, nlead):
            value = number(toks[i]) if col is not None and i < len(toks) else None
            if value is not None and value < 0:
                add_warning(run, _negative_note(head["benchmark"], col[0], value, col[1]))
                toks[i] = "N/A"
                dropped += 1
        if dropped > before:
            out.append(body[done:line] + " ".join(toks))
            done = end
        nxt = _MINUS.search(body, end)
        if nxt is None:
            break
        line = body.rfind("\n", 0, nxt.start()) + 1
    if not dropped:
        return pack
    out.append(body[done:])
    return Pack(TABLE, pack.count - dropped, "".join(out), pack.benchmarks)


# A line a driver, library or launcher marks as a warning (``libibverbs: Warning: couldn't load
# driver``, ``UCX  WARN``, ``<warn>``, ``WARNING: ... timed out, retrying``): a warning never
# changes a run's status, whatever else its text says
_WARNED = re.compile(r"\bwarn(?:ing)?\b|<warn>", re.IGNORECASE)


def is_warning(line: str) -> bool:
    """Whether ``line`` says it is a warning (``_WARNED``)."""
    return _WARNED.search(line) is not None


def new_run(tool: str, name: str = "") -> Run:
    """A run record for an imported log; parsers fill hosts, devices, versions and status, and
    the rank count where the log proves one (else it stays None: unknown, never 0)."""
    run = Run(benchmark=IMPORT_BENCHMARK, source=tool, status=COMPLETE, ranks=None)
    run.meta["tool"] = tool
    if name:
        run.meta["file"] = name
    return run


def add_warning(run: Run, text: str) -> None:
    """A doubt about the log's figures that does not make them wrong to keep: stored in the run's
    ``warnings`` meta list, which ``results show`` and ``validate`` print."""
    warnings = run.meta.setdefault(WARNINGS, [])
    if text not in warnings and len(warnings) < MAX_ERROR_LINES:
        warnings.append(text)


def add_error(run: Run, line: str) -> None:
    if len(run.errors) < MAX_ERROR_LINES:
        run.errors.append(line.strip())
    else:
        run.meta["errors_dropped"] = run.meta.get("errors_dropped", 0) + 1


# Prefixes a launcher or log collector writes before a tool's line; several may stack
# (SkyPilot before an MPI tag, a kubectl prefix before a timestamp).
_TIMESTAMP = r"\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]? "
_WRAPPER = re.compile(
    r"\[\d+,\d+\]<(?:stdout|stderr)>:"                               # mpirun --tag-output
    r"|\([\w.-]+, rank=\d+, pid=\d+(?:, ip=[^)]*)?\) "                # SkyPilot
    r"|\[pod/[^\]\s]+\] "                                            # kubectl logs --prefix
    r"|" + _TIMESTAMP +                                              # timestamps
    r"| *\d{1,6}:(?: |$)")                                           # srun --label, padded
_HOST_PREFIX = re.compile(r"([A-Za-z][\w.-]*): ")                    # pdsh / pdcp
_HOST_WINDOW = 40     # lines looked at to decide whether pdsh prefixed them all
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# never across a line end: Roles strips many lines at once
_MARK = re.compile(r":mark:`([^`\n]*)`")
_BOLD = re.compile(r"\*\*([^*\n]+)\*\*")


def _strip_doc_markup(line: str) -> str:
    # split keeps each match's group between the text around it: the sub with r"\1", without
    # a Python call per match
    line = "".join(_MARK.split(line))
    line = "".join(_BOLD.split(line))
    return line.replace("\\|", "|").replace("\\\\", "\\").replace("\\*", "*")


def strip_wrappers(line: str) -> str:
    """``line`` without the launcher and log-collector prefixes before it (see the module doc)."""
    # Cheap test first: every prefix has a ':' early or starts with '(' or '['; a table row
    # (the bulk of large logs) has none of these.
    while (line.find(":", 0, 40) >= 0 or line[:1] in "([") and (m := _WRAPPER.match(line)):
        if not m.end():
            break
        line = line[m.end():]
    return line


# Words a line starts with as ``word: `` that name no host: diagnostics, and programs that put
# their own name before their messages (``iperf3: error - ...``, ``bash: ...``)
_NOT_HOSTS = frozenset({"error", "warning", "note", "info", "debug", "fatal", "usage", "hint", "iperf3",
                        "iperf", "bash", "sh", "zsh", "ssh", "srun", "sbatch", "mpirun", "mpiexec", "python",
                        "python3", "torchrun", "sudo"})


def _host_prefixes(lines: list[str]) -> bool:
    """Whether (nearly) every non-empty line starts with ``host: `` as pdsh writes it."""
    texts = [ln for ln in lines if ln.strip()]
    if len(texts) >= 5:
        hits = sum(1 for ln in texts if _HOST_PREFIX.match(ln))
        return hits >= 0.9 * len(texts)
    # A short log (a GEMM's is three lines: command, CSV header, values): every line behind the
    # same prefix, and that prefix a host's name. A tool's own ``Label: value`` lines start with
    # a capitalised word (``Duration: 1.2`` on every line of a two-line log is no host), its
    # messages with a diagnostic word or its program's name; a host's name is lower case, or
    # holds a digit, '-' or '.' (node1, gpu-a.cluster, DGX01).
    if len(texts) < 2:
        return False
    first = _HOST_PREFIX.match(texts[0])
    if first is None or not all(ln.startswith(first.group(0)) for ln in texts):
        return False
    host = first.group(1)
    return host.lower() not in _NOT_HOSTS and "_" not in host \
        and (host.islower() or any(c.isdigit() or c in "-." for c in host))


# What a JSON document's first line starts with: '{', or a list of documents ('[' then '{', or
# '[' alone on its line); not a text line such as iperf3's '[  5]' or a log's '[INFO]'
_JSON_LINE = re.compile(f"[\\s{BOM}]*(?:\\{{|\\[\\s*(?:[\\[\\]{{]|$))")
_TIMESTAMPS = re.compile(_TIMESTAMP)


def _line_prefix(line: str) -> str:
    """The launcher, log-collector and pdsh prefixes before ``line``, as one text."""
    rest = strip_wrappers(line)
    m = _HOST_PREFIX.match(rest)
    if m and m.group(1).lower() not in _NOT_HOSTS:
        rest = strip_wrappers(rest[m.end():])
    return line[:len(line) - len(rest)]


def json_behind_prefixes(text: str, what: str) -> str:
    """``text`` without the prefixes before its lines where JSON is behind them (``srun -l``'s
    ``0: {``, ``[1,0]<stdout>:{``, pdsh's ``node1: {``), for a JSON decoder to read; ``text``
    itself otherwise. Lines behind different prefixes (several ranks or hosts, each writing a
    document) are taken apart: each one's lines in their order, one after the other. Refused
    (``not {what}``) where a line among them carries none: no decoder reads the result."""
    first, at = "", 0
    while not first.strip() and at <= len(text):   # the first line with text, without splitting them all
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        first, at = _on_screen(text[at:end]), end + 1
    first_prefix = _line_prefix(first)
    if not first_prefix or not _JSON_LINE.match(first, len(first_prefix)):
        return text
    by_prefix: dict[str, list[str]] = {}
    for at, raw in enumerate(text.split("\n"), 1):
        line = _on_screen(raw)
        if not line.strip():
            continue
        prefix = _line_prefix(line)
        if not prefix:
            raise LogFormatError(f"not {what}: its lines carry a launcher's prefix ({first_prefix!r}) "
                                 f"but line {at} has none: {shown(line)}")
        # timestamps differ on every line of one writer; ranks and hosts are told apart by the rest
        by_prefix.setdefault(_TIMESTAMPS.sub("", prefix), []).append(line[len(prefix):])
    return "".join(ln + "\n" for group in by_prefix.values() for ln in group)


def text_lines(text: str) -> list[str]:
    """The lines of ``text`` (without the line feeds that end them), split as a file is read
    line by line: at line feeds only. str.splitlines also splits at a lone CR (progress output,
    which ``_on_screen`` reads), form and vertical feeds, \\x1c-\\x1e, NEL and the Unicode line
    separators, so a log would read differently given as text than as a file."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def _on_screen(raw: str) -> str:
    """A line as a terminal shows it: no line end, no colour codes, only what was written last
    where progress output went back over it."""
    line = raw.rstrip("\r\n")
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if "\r" in line:
        line = line.rsplit("\r", 1)[-1]
    if line[:1] == BOM:   # as TextCleaner.clean: after the overwrites, before any prefix
        line = line.lstrip(BOM)
    return line


def _unwrapped(lines: Iterable[str]) -> Iterator[str]:
    buffered: list[str] = []
    it = iter(lines)
    for raw in it:
        buffered.append(strip_wrappers(_on_screen(raw)))
        if len(buffered) >= _HOST_WINDOW:
            break
    pdsh = _host_prefixes(buffered)
    for line in buffered:
        yield _strip_host(line) if pdsh else line
    for raw in it:
        line = strip_wrappers(_on_screen(raw))
        yield _strip_host(line) if pdsh else line


def _strip_host(line: str) -> str:
    m = _HOST_PREFIX.match(line)
    return strip_wrappers(line[m.end():]) if m else line


_WRAPPERS_AT_LINE = re.compile(r"^(?:" + _WRAPPER.pattern + r")+", re.M)
_HOST_AT_LINE = re.compile(r"^" + _HOST_PREFIX.pattern, re.M)
_OVERWRITTEN = re.compile(r"[^\n]*\r")
_CRS_AT_END = re.compile(r"\r+\n")
_BOMS_AT_LINE = re.compile(f"^{BOM}+", re.M)
CHUNK_LINES = 1 << 16


def drop_line_boms(text: str) -> str:
    """``text`` without the byte order marks that start its lines, as the cleaners see it."""
    # rare: a pass over the text only when one is in it (a scan in C otherwise)
    return _BOMS_AT_LINE.sub("", text) if BOM in text else text


class TextCleaner:
    """``clean_lines`` for big blocks of text, but for document markup (``Roles``): the same
    cleaning of each line, done by a few regular-expression passes over the block instead of
    Python work per line (the nccl-tests importer reads 200 MB logs this way). Which prefixes a
    log carries is decided from its first lines; a launcher's prefix that only appears later is
    left for the parser to take off."""

    def __init__(self, head_lines: list[str]) -> None:
        # judged on the lines as clean_lines sees them (a colour code can hide a prefix)
        lines = [_on_screen(ln) for ln in head_lines]
        self.pdsh = _host_prefixes([strip_wrappers(ln) for ln in lines[:_HOST_WINDOW]])
        if self.pdsh:
            lines = [_strip_host(ln) for ln in lines]
        self.wrapped = any(strip_wrappers(ln) != ln for ln in lines)

    def clean(self, text: str) -> str:
        if "\r" in text:
            text = text.replace("\r\n", "\n")
            if "\r" in text:
                # CRs before a line end move nothing onto the screen (as _on_screen's rstrip);
                # another is progress output overwritten in place: keep what was left on screen
                text = _OVERWRITTEN.sub("", _CRS_AT_END.sub("\n", text))
        if "\x1b" in text:
            text = _ANSI.sub("", text)
        text = drop_line_boms(text)
        if self.pdsh:
            # as clean_lines: prefixes before the host's, the host's, then prefixes after it
            # (a launcher's tag on some lines only, which the log's start need not show)
            text = _HOST_AT_LINE.sub("", _WRAPPERS_AT_LINE.sub("", text))
            text = _WRAPPERS_AT_LINE.sub("", text)
        elif self.wrapped:
            text = _WRAPPERS_AT_LINE.sub("", text)
        return text


class Prepared:
    """What ``Lines.prepare`` made of a run, in the process that parsed it."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class Lines:
    """A log's lines: the ones already read (its head), then the rest of its source. A file
    as the source is also readable in large blocks (``blocks``), without a Python step per line."""

    def __init__(self, head: list[str], rest: Iterator[str], foreign: re.Pattern[str] | None = None,
                 path: str | None = None, jobs: int = 1,
                 prepare: Callable[[ImportedRun], Any] | None = None,
                 meanwhile: Callable[[], None] | None = None) -> None:
        self.head, self.rest = head, rest
        self.foreign = foreign   # where another tool's output begins (a streaming parser hands it over)
        self.path = path         # the plain UTF-8 file they come from, when they do (parsers may read it in parts)
        self.jobs = jobs         # processes a parser may read it with
        # What the caller makes of each run (iter_runs' ``prepare``): a parser reading in worker
        # processes may apply it there and give ``Prepared`` results, so only they cross over
        self.prepare = prepare
        # What the caller does while a parser's worker processes read their first parts (the
        # import hashes the file then); a parser reading in one process never calls it
        self.meanwhile = meanwhile

    def __iter__(self) -> Iterator[str]:
        yield from self.head
        yield from self.rest

    def blocks(self, size: int = 1 << 20) -> Iterator[str]:
        """The text in blocks of whole lines, each ending with a newline."""
        if self.head:
            yield "".join(ln if ln.endswith("\n") else ln + "\n" for ln in self.head)
        read = getattr(self.rest, "read", None)
        if read is None:
            yield from _joined(self.rest)
            return
        while True:
            block = read(size)
            if not block:
                return
            # completed to its line end: a line feed (a file opened with newline="" stops a
            # readline at a lone CR too), or the end of the file
            while not block.endswith("\n"):
                more = self.rest.readline()  # type: ignore[attr-defined]
                if not more:
                    block += "\n"
                    break
                block += more
            yield block


def line_blocks(lines: Iterable[str]) -> Iterator[str]:
    """The lines in blocks of whole lines, each ending with a newline (``Lines.blocks`` for a
    file, joined in groups for lines given otherwise)."""
    return lines.blocks() if isinstance(lines, Lines) else _joined(lines)


def _joined(lines: Iterable[str]) -> Iterator[str]:
    it = iter(lines)
    while True:
        block = list(itertools.islice(it, CHUNK_LINES))
        if not block:
            return
        yield "".join(ln if ln.endswith("\n") else ln + "\n" for ln in block)


def _role_line(text: str, start: int, end: int) -> tuple[str | None, int]:
    """The line ``text[start:end]`` that opens a role, joined with the lines the role was
    wrapped onto (as clean_lines joins them), and where the last of them ends; None when the
    role is still open at the end of ``text``."""
    line = text[start:end]
    while line.count("`") % 2:
        if end + 1 >= len(text):
            return None, end
        nxt = text.find("\n", end + 1)
        # a launcher's prefix the log's start did not show (the cleaner left it) goes, as in
        # clean_lines: the parser takes such prefixes off only at a line's start
        line += " " + strip_wrappers(text[end + 1:nxt]).strip()
        end = nxt
    return line, end


# A role whose text may run over lines (the block path's split; _MARK stays within a line)
_ROLE = re.compile(r":mark:`([^`]*)`")
# In a role's text, a wrapped line that the per-role path would change beyond joining it with
# a space: whitespace before or after the line feed (strip()), a launcher's prefix (_WRAPPER:
# each starts with '(', '[', spaces, 'digits:' or a date), or a role over three lines or more
_UNPLAIN_WRAP = re.compile(r"\n(?:(?<=\s\n)|[\s(\[]|\d{1,6}:|\d{4}-|[^\x00]*\n)")


def _plain_roles(text: str) -> str | None:
    """``text`` (whole lines) with its roles undone as ``Roles.feed`` undoes them, computed
    with few passes over the text, or None where that would differ and the per-role path must
    run: a backtick that is no role's, a role left open, bold or escapes on a role's line, a
    wrapped line that strip() or a launcher prefix would change. A document quoting a log has a
    role on most of its lines. (Single-character ``in`` tests: they scan fastest.)"""
    if not text.endswith("\n"):
        return None
    parts = _ROLE.split(text)
    roles = parts[1::2]
    if "`" in "\x00".join(parts[0::2]):
        return None   # a backtick outside every role: a stray one, or a role left open
    inner = "\x00".join(roles)
    if "\n" in inner:
        if _UNPLAIN_WRAP.search(inner):
            return None
        # strip() takes whitespace off a wrapped role's last line: where that line ends after
        # the role's closing backtick (other roles may follow it on the line), none may be there
        for i in [i for i, role in enumerate(roles) if "\n" in role]:
            for k in range(2 * i + 2, len(parts)):
                end = parts[k].find("\n")
                if end >= 0:
                    if k % 2 == 0 and end and parts[k][end - 1].isspace():
                        return None
                    break
        inner = inner.replace("\n", " ")
    plain = inner.split("\x00")
    # (every role's text lies on lines that hold a backtick: the line check covers it too)
    if len(plain) != len(roles) or _markup_beside_role(text, "\\") \
            or "*" in text and _markup_beside_role(text, "**"):
        return None
    parts[1::2] = plain
    return "".join(parts)


def _markup_beside_role(text: str, mark: str) -> bool:
    """Whether ``mark`` is on a line that holds a backtick (a role's line). A line without one is
    no role's: _plain_roles refuses a role wrapped over a whole line."""
    at = text.find(mark)
    while at >= 0:
        start, end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
        if text.find("`", start, end) >= 0:
            return True
        at = text.find(mark, end)
    return False


class Roles:
    """``clean_lines``' handling of a document's ``:mark:`` roles, for cleaned blocks of whole
    lines: a role wrapped over source lines is joined into one line, and the markup is taken
    off the lines that hold a role (only those: a ``\\`` elsewhere is the log's own). A role
    still open at a block's end is held back and read with the next block."""

    def __init__(self) -> None:
        self.held = ""          # the lines from an open role's first line on
        self.open_at_end = False

    def feed(self, text: str) -> str:
        """The lines of ``text`` (after the lines held back) that no open role goes on past."""
        if self.held:
            text, self.held = self.held + text, ""
        elif ":mark:`" not in text:
            return text
        done = _plain_roles(text)
        if done is not None:
            return done
        # Python work only per line of a role, the markup taken off all of them at once; the
        # lines between are copied as they are
        between: list[str] = []
        roles: list[str] = []
        done = 0     # text[:done] is in between/roles
        at = text.find(":mark:`")
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            role, end = _role_line(text, start, text.find("\n", at))
            if role is None:   # open at the block's end: read on with the next
                self.held = text[start:]
                text = text[:start]
                break
            between.append(text[done:start])
            roles.append(role)
            done = end
            at = text.find(":mark:`", end)
        if not roles:
            return text[done:]
        out = [""] * (2 * len(roles))
        out[0::2] = between
        out[1::2] = _strip_doc_markup("\n".join(roles)).split("\n")
        out.append(text[done:])
        return "".join(out)

    def rest(self) -> str:
        """The lines held back at the log's end: a role never closed runs to the end, as in
        ``clean_lines``."""
        if not self.held:
            return ""
        self.open_at_end = True
        lines = self.held.split("\n")
        lines.pop()
        self.held = ""
        return "\n".join(_joined_roles(lines)) + "\n"


def first_cleaner(head: str) -> TextCleaner:
    """The cleaning a log needs, decided on its first block of text."""
    return TextCleaner(head[:1 << 16].split("\n")[:_HOST_WINDOW * 4])


def seen_lines(text: str) -> str:
    """``text`` line for line as a tool's parser reads it: without colour codes, progress output
    overwritten in place, byte order marks and launcher prefixes (wherever they appear; pdsh's
    host where the log's start shows it), so that a tool's first line is found behind them. The
    same number of lines as ``text``, or ``text`` itself where cleaning would join lines."""
    cleaner = first_cleaner(text)
    cleaner.wrapped = True   # a prefix on later lines only still hides the line behind it
    seen = cleaner.clean(text)
    return seen if seen.count("\n") == text.count("\n") else text


def text_chunks(lines: Iterable[str], cleaner: TextCleaner | None = None, roles: Roles | None = None
                ) -> Iterator[str]:
    """The log as cleaned blocks of whole lines (each ending with a newline); a document's
    ``:mark:`` role is never cut in two. Which prefixes to take off is decided on its start
    (or given: ``cleaner``, for a part of a log whose start was read before). ``roles``: where
    the caller learns whether a role was left open at the end."""
    blocks = lines.blocks() if isinstance(lines, Lines) else _joined(lines)
    roles = roles if roles is not None else Roles()
    for block in blocks:
        if cleaner is None:
            cleaner = first_cleaner(block)
        text = roles.feed(cleaner.clean(block))
        if text:
            yield text
    rest = roles.rest()
    if rest:
        yield rest


def clean_lines(lines: Iterable[str]) -> Iterator[str]:
    """Yield the tool's own output lines, without launcher prefixes, colours or document markup.

    A ``:mark:`` role that a document wrapped over several source lines is joined back into one
    line (with a space where the wrap was), so a table row is one line again.
    """
    return _joined_roles(_unwrapped(lines))


def _joined_roles(lines: Iterable[str]) -> Iterator[str]:
    """The lines with each role joined to the lines it was wrapped onto (a role runs on until
    its line holds an even number of backticks) and the markup taken off those lines."""
    pending: str | None = None
    for line in lines:
        if pending is None and ":mark:`" not in line:
            yield line
            continue
        pending = line if pending is None else pending + " " + line.strip()
        if pending.count("`") % 2 == 0:
            yield _strip_doc_markup(pending)
            pending = None
    if pending is not None:
        yield _strip_doc_markup(pending)


def to_float(token: str) -> float | None:
    """A number as tools print it (``1.5``, ``3e-08``, ``1.2e+06*``); None for N/A, nan, junk."""
    token = token.rstrip("*,")
    try:
        value = float(token)
    except ValueError:
        return None
    if math.isnan(value) or math.isinf(value):
        return None
    return value


def to_int(token: str) -> int | None:
    try:
        return int(token)
    except ValueError:
        value = to_float(token)
        return int(value) if value is not None and value == int(value) else None


def finite(value: object) -> float | None:
    """A decoded JSON value as a finite float; None for anything else (text, null, true, an
    infinite number or one of hundreds of digits, which no float holds)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def shown(value: object) -> str:
    """A decoded JSON value as an error message quotes it: short, an integer of hundreds of
    digits by its length."""
    if isinstance(value, int) and value.bit_length() > 64:
        try:
            digits = str(abs(value))
        except ValueError:   # past Python's limit on converting an integer to text
            return f"an integer of {value.bit_length()} bits"
        return f"{'-' if value < 0 else ''}{digits[:3]}...{digits[-3:]} ({len(digits)} digits)"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def not_utf8_in(value: object) -> str | None:
    """The first text in a decoded JSON value, keys included, that is ``not_utf8``; None if none."""
    if isinstance(value, str):
        return value if not_utf8(value) else None
    items: Iterable[object] = ()
    if isinstance(value, dict):
        items = itertools.chain.from_iterable(value.items())
    elif isinstance(value, list):
        items = value
    for item in items:
        found = not_utf8_in(item)
        if found is not None:
            return found
    return None


# What goes before and between JSON documents: whitespace, and byte order marks, which are not
# JSON's (the decoder stops at one) but a document saved with one and appended to another has one
_JSON_GAP = re.compile(f"[\\s{BOM}]*")


def json_gap_end(text: str, at: int = 0) -> int:
    """Where the JSON in ``text`` goes on from ``at``: past whitespace and byte order marks."""
    return _JSON_GAP.match(text, at).end()  # type: ignore[union-attr]  # matches the empty string


def json_documents(text: str, what: str, cut_short: bool = False) -> list[Any]:
    """The JSON documents in ``text``, one after another (a loop appending a tool's JSON to a
    file, each document saved with or without a byte order mark). Refused as ``not {what}``
    where one does not decode; with ``cut_short``, a last document that does not (the writer
    stopped mid-document) is left out once a document before it decoded."""
    decoder = json.JSONDecoder()
    docs: list[Any] = []
    i = json_gap_end(text)
    while i < len(text):
        try:
            doc, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError as e:
            if docs and cut_short:
                break
            raise LogFormatError(f"not {what}: {e.msg} at line {e.lineno}") from None
        except ValueError as e:   # an integer past the digits Python converts
            raise LogFormatError(f"not {what}: {e}") from None
        docs.append(doc)
        i = json_gap_end(text, i)
    return docs


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def refuse_not_utf8(doc: object, text: str, where: str) -> None:
    """Refuse a document decoded from the JSON ``text`` that holds a lone surrogate (see
    ``not_utf8``): stored, it would break every CSV export and report of its run. Only JSON's
    escapes make one (a file's bytes that are not UTF-8 are read as U+FFFD), so the document is
    walked only when ``text`` has such an escape."""
    if _SURROGATE_ESCAPE.search(text):
        found = not_utf8_in(doc)
        if found is not None:
            raise LogFormatError(f"{where}: not UTF-8 text: {shown(found)}")


def first_number(text: str) -> float | None:
    m = re.search(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text)
    return float(m.group(0)) if m else None
