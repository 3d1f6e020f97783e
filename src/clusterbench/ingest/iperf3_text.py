"""iperf3's text output (what it prints without ``-J``) -> the ``net`` records of ``iperf3 -J``.

Read from the final summary, as the JSON importer reads ``end.sum_sent``/``end.sum_received``:
the rows that end in ``sender`` / ``receiver``, the ``[SUM]`` rows when there are several streams
(``-P``). TCP and UDP, client and server side, both header words (``Bandwidth`` before iperf 3.2,
``Bitrate`` since). Units as iperf3's src/units.c prints them: bit rates in steps of 1000
(``Kbits/sec``), byte quantities and byte rates (``-f M``: ``MBytes/sec``) in steps of 1024.
``--bidir`` rows carry their role (``[  5][TX-C]``): each direction is stored with its own
src/dst and ``bidirectional`` true; ``--get-server-output``'s server report is a run of its own.

Not stored: the per-second interval rows, a UDP sender's jitter and loss (only the receiver
measures them; the sender prints zeros), and in a run interrupted with Ctrl-C the summary rows
that moved no byte (their interval can be nonsense: ``0.00-476225.68 sec``). ``--timestamps``
(iperf 3.8+) puts the time before every line: its default form (``%c ``: ``Thu Nov 26 11:28:12
2026 ``) and seconds since the epoch (``--timestamps='%s '``) are read past here, ISO forms by
the common launcher-prefix cleaning; other strftime formats are not known. iperf 2 output
(``Client connecting to``, ``Server Report:``, ``Write/Err``) is refused: its columns differ.
"""

from __future__ import annotations

import re

from clusterbench.families.net.spec import BANDWIDTH, JITTER, LOST, NET, RETRANSMITS
from clusterbench.ingest.common import (
    ImportedRun,
    LogFormatError,
    add_error,
    clean_lines,
    new_run,
    shown,
    text_lines,
    to_float,
)
from clusterbench.records import INCOMPLETE, Measurement

# ``--bidir`` (iperf 3.7+) tags each row with its role after the id: ``[  5][TX-C]`` is a stream the
# client sends on, ``[RX-C]`` one it receives on, ``[TX-S]``/``[RX-S]`` the same seen by the server.
_ROW = re.compile(r"^\[\s*(\d+|SUM)\](?:\[(TX|RX)-([CS])\])?\s+(\d+(?:\.\d+)?)-\s*(\d+(?:\.\d+)?)\s+sec\s+([\d.]+)\s+([KMGT]?)Bytes\s+"
                  r"([\d.]+)\s+([KMGT]?)(bits|Bytes)/sec(.*)$")
_UDP_TAIL = re.compile(r"^\s*([\d.]+)\s+ms\s+(-?\d+)/\s*(\d+)\s+\((-?[\d.e+-]+)%\)")
_BIT_STEP = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_BYTE_STEP = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
_IPERF2 = re.compile(r"^Client connecting to .*, (TCP|UDP) port|Server Report:|\bWrite/Err\b|\bRead/Err\b"
                     r"|^Server listening on (TCP|UDP) port", re.M)
# ``--timestamps``: strftime's ``%c`` in the C locale (iperf's default format) or ``%s``
STAMP = (r"(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d "
         r"\d\d:\d\d:\d\d \d{4} |\d{9,11} )")
_STAMP = re.compile(STAMP)
# the client's command line quoted in the log (a shell prompt, a mail): the host it connects to
_COMMAND = re.compile(r"\biperf3\s.*?(?:\s-c|\s--client)[ =]?(\S+)")
SIGNATURE = re.compile(rf"^\s*{STAMP}?(?:\^C)?\[ ID\](?:\[Role\])? Interval\s+Transfer\s+(?:Bitrate|Bandwidth)"
                       rf"|^{STAMP}?Connecting to host \S+, port \d+|^{STAMP}?Server listening on \d+", re.M)


class _Run:
    def __init__(self, name: str) -> None:
        self.run = new_run("iperf3", name)
        self.server = False
        self.reverse = False
        self.local = self.remote = ""
        self.streams: set[str] = set()
        self.protocol = "tcp"
        self.duration: float | None = None
        self.block: int | None = None
        self.rows: list[tuple[str, str, float, float, str, str]] = []  # id, side, bytes, bytes/s, rest, TX/RX
        self.bidir = False
        self.client: _Run | None = None   # the client run whose log embeds this server's output
        self.interrupted = False
        self.notes: list[str] = []
        self.summary = False
        self.pending: str | None = None   # a summary row whose side word has not come yet
        self.untagged: list[str] = []      # UDP rows without one under the summary's header
        self.summary_header = False        # the header after the '- - -' line has come


def parse_text_output(text: str, name: str = "") -> list[ImportedRun]:
    if _IPERF2.search(text):
        raise LogFormatError("iperf 2 output (Client connecting to / Server Report / Write/Err), not iperf3: "
                             "its columns differ and it is not imported")
    version = ""
    runs: list[_Run] = []
    cur = _Run(name)
    later: str | None = None   # the host of a command line quoted after a run's summary
    for line in clean_lines(text_lines(text)):
        s = _STAMP.sub("", line.strip(), count=1) if line[:1].isalnum() else line.strip()
        if s.startswith("^C"):
            cur.interrupted = True
            s = s[2:].strip()
        if not s:
            continue
        if cur.pending is not None:
            if s in ("sender", "receiver"):   # a mail client wrapped the row's last word onto a line of its own
                _summary_row(cur, f"{cur.pending} {s}")
                cur.pending = None
                continue
            _flush(cur)
        m = re.match(r"iperf (3\.[\w.]+)", s)
        if m:
            version = m.group(1)
            continue
        if s.startswith(("Connecting to host", "Server listening on")):
            if cur.rows or cur.summary:
                runs.append(cur)
                cur = _Run(name)
            later = None
            cur.server = s.startswith("Server")
            if not cur.server:
                cur.remote = s.split("host", 1)[1].split(",")[0].strip()
            continue
        command = _COMMAND.search(s)
        if command and (cur.rows or cur.untagged or cur.pending):   # after a summary: the next run's, or (a mail) quoted after its own output
            later = command.group(1)
        elif command and not cur.remote:   # the command line quoted in the log (a prompt)
            cur.remote = command.group(1)
        if s.startswith("Accepted connection from"):
            cur.server = True
            cur.remote = s.split("from", 1)[1].split(",")[0].strip()
            continue
        if s.startswith("Reverse mode"):
            cur.reverse = True
            continue
        m = re.match(r"\[\s*(\d+)\] local (\S+) port \d+ connected (?:to|with) (\S+) port", s)
        if m:
            cur.streams.add(m.group(1))
            cur.local, cur.remote = m.group(2), m.group(3)
            continue
        if s.startswith("Starting Test:"):
            m = re.search(r"protocol: (\w+), (\d+) streams, (\d+) byte blocks.*?(\d+) second test", s)
            if m:
                cur.protocol = m.group(1).lower()
                cur.block, cur.duration = int(m.group(3)), float(m.group(4))
            continue
        if s.startswith("[ ID]"):
            if cur.rows or cur.untagged:   # a header after a whole summary: another invocation's output
                _flush(cur)
                runs.append(cur)
                cur = _Run(name)
                cur.remote, later = later or "", None
                cur.summary = True   # (the '- - -' line before this header was its own)
            # iperf3 prints the header once over the intervals, and again after the '- - -'
            # line that opens the summary (iperf_api.c iperf_print_results)
            cur.summary_header = cur.summary
            if "Jitter" in s or "Datagrams" in s:
                cur.protocol = "udp"
            continue
        if s.startswith("- - -") or s.startswith("Test Complete"):
            cur.summary = True
            continue
        if "sender statistics not available" in s:
            cur.notes.append("the server printed no sender statistics")
            continue
        if "datagrams received out-of-order" in s:
            m = re.search(r"(\d+) datagrams received out-of-order", s)
            if m:
                cur.run.meta["out_of_order_datagrams"] = int(m.group(1))
            continue
        if s.startswith("iperf3: interrupt") or s.startswith("iperf3: error"):
            cur.interrupted = cur.interrupted or "interrupt" in s
            add_error(cur.run, s)
            continue
        if s == "Server output:":
            # --get-server-output: the server's own report follows inside the client's log
            if cur.rows or cur.summary:
                runs.append(cur)
                client, cur = cur, _Run(name)
                cur.client = client
            continue
        m = _ROW.match(s)
        if m and m.group(2):
            cur.bidir = True
        if m and cur.summary:
            rest = m.group(11).strip()
            if not rest.endswith(("sender", "receiver")):
                cur.pending = s   # its side on the next line (wrapped), or none (iperf 3.0 UDP)
                continue
            _summary_row(cur, s)
    _flush(cur)
    if later and not cur.remote:
        cur.remote = later
    runs.append(cur)
    out = []
    for r in runs:
        built = _build(r, version)
        if built is not None:
            out.append(built)
    return out


def _flush(cur: _Run) -> None:
    """A row after a ``- - -`` line that no side word followed: an interval row (iperf3 prints
    the line between the interval blocks of -P), or, under the summary's header, iperf 3.0's UDP
    summary, which has none (``_untagged_summary``)."""
    row, cur.pending = cur.pending, None
    m = _ROW.match(row or "")
    if m and cur.summary_header and _UDP_TAIL.match(m.group(11).strip()):
        cur.untagged.append(row or "")


def _summary_row(cur: _Run, s: str) -> None:
    """One row of the final summary, ``s`` ending in its side word."""
    m = _ROW.match(s)
    assert m is not None
    rest = m.group(11).strip()
    side = "sender" if rest.endswith("sender") else "receiver"
    rate_step = _BIT_STEP[m.group(9)] / 8 if m.group(10) == "bits" else _BYTE_STEP[m.group(9)]
    moved, rate = to_float(m.group(6)), to_float(m.group(8))
    if moved is None or rate is None:   # '1.2.3', or hundreds of digits: a damaged summary
        raise LogFormatError(f"summary row {shown(s)}: its transfer or rate is not a number")
    # with --bidir and --get-server-output iperf3 prints the client's receiving streams
    # ([RX-C]) after the server's report: they are the client's rows
    owner = cur.client if cur.client is not None and m.group(3) == "C" else cur
    owner.rows.append((m.group(1), side, moved * _BYTE_STEP[m.group(7)], rate * rate_step,
                       rest[: -len(side)].strip(), m.group(2) or ""))


def _untagged_summary(cur: _Run) -> None:
    """iperf 3.0's UDP summary: under the header after the ``- - -`` line, one row per stream and
    ``[SUM]``, from 0 to the end, without ``sender``/``receiver`` (iperf_api.c iperf_print_results, 3.0.x):
    the sender's bytes and rate with the jitter and loss its receiver measured, as -J's
    ``end.sum``. Taken only where no row of the summary carries a side word (every later
    iperf3 prints one)."""
    if cur.rows or not cur.untagged or cur.protocol != "udp":
        return
    if all(re.match(r"^\[\s*(?:\d+|SUM)\](?:\[\w+-\w\])?\s+0\.0+-", row) for row in cur.untagged):
        cur.run.meta["summary_without_sides"] = "iperf 3.0 UDP: the sender's bytes with the receiver's jitter and loss"
        for row in cur.untagged:
            _summary_row(cur, f"{row} sender")


def _build(cur: _Run, version: str) -> ImportedRun | None:
    _untagged_summary(cur)
    run = cur.run
    run.source = f"iperf3 {version}".strip()
    if version:
        run.versions["iperf3"] = version
    # --bidir opens -P connections each way, and each is listed as connected; the summary
    # lists each stream of a direction once (a log that quotes only the summary)
    ids: dict[tuple[str, str], set[str]] = {}
    for r in cur.rows:
        if r[0] != "SUM":
            ids.setdefault((r[5], r[1]), set()).add(r[0])
    streams = max(len(cur.streams) // (2 if cur.bidir else 1), *map(len, ids.values()), 1)
    rows = []
    cut = 0
    for role, side in {(r[5], r[1]) for r in cur.rows}:
        group = [r for r in cur.rows if (r[5], r[1]) == (role, side)]
        if any(r[0] == "SUM" for r in group):
            rows += [r for r in group if r[0] == "SUM"]
        elif streams > 1 or len({r[0] for r in group}) > 1:
            # iperf3 prints a [SUM] row after the streams' rows whenever -P is above 1: a log
            # cut before it holds one stream's share, which is not the test's bandwidth
            cut += len(group)
        else:
            rows += group
    if cut:
        cur.notes.append(f"{cut} per-stream summary rows without their [SUM] row (the log is cut short): "
                         "not stored")
        add_error(run, "the summary's [SUM] row is missing: the log is cut short")
    # the client sends unless -R; a server receives what its client sends
    sending_local = not cur.reverse and not cur.server
    run.hosts = list(dict.fromkeys(h for h in (cur.local, cur.remote) if h))   # one host on loopback
    run.meta["role"] = "server" if cur.server else "client"
    ms: list[Measurement] = []
    skipped = 0
    for _id, side, nbytes, rate, rest, role in sorted(rows, key=lambda r: r[5] == "RX"):
        if cur.interrupted and nbytes == 0:
            skipped += 1
            continue
        # a --bidir row's role says which way its bytes went, whichever side printed it
        local_sends = role == "TX" if role else sending_local
        src, dst = (cur.local, cur.remote) if local_sends else (cur.remote, cur.local)
        params: dict[str, object] = {"src_host": src, "dst_host": dst, "protocol": cur.protocol,
                                     "streams": streams}
        if role:
            # each direction shared the link with the other: not comparable with a one-way run;
            # the leg tells the two apart where both ends are one host (a loopback test)
            params["bidirectional"] = True
            params["leg"] = "forward" if (role == "TX") != cur.server else "reverse"   # forward: the client sends
        if cur.duration:
            params["duration_s"] = cur.duration
        if cur.block:
            params["block_bytes"] = cur.block
        params.update(side="sent" if side == "sender" else "received", bytes=int(nbytes))
        ms.append(BANDWIDTH(NET, rate / 1e9, params))
        if cur.protocol == "tcp" and side == "sender" and rest.split()[:1] and rest.split()[0].isdigit():
            ms.append(RETRANSMITS(NET, float(rest.split()[0]), params))
        u = _UDP_TAIL.match(rest)
        # the receiver measures them; iperf 3.0's one UDP row carries the receiver's figures
        if cur.protocol == "udp" and (side == "receiver" or "summary_without_sides" in run.meta) and u:
            ms.append(JITTER(NET, float(u.group(1)) * 1000, params))
            lost = to_float(u.group(4))
            if lost is not None:
                ms.append(LOST(NET, lost, params))
    if skipped:
        cur.notes.append(f"{skipped} summary rows of the interrupted run moved no byte: not stored")
    if cur.notes:
        run.meta["notes"] = cur.notes
    if cur.interrupted:
        run.status = INCOMPLETE
        if not any("interrupt" in e for e in run.errors):
            add_error(run, "interrupted (^C)")
    if not ms and not run.errors:
        return None
    if not ms or cut:
        run.status = INCOMPLETE
    return ImportedRun(run, ms)
