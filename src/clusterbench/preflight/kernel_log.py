"""GPU and PCIe errors in the kernel log: NVIDIA Xid events, amdgpu errors, PCIe AER reports.

``parse(text)`` is a pure function over ``dmesg`` text (or ``/dev/kmsg`` records); ``read()``
fetches the live log where this process may read it and says why not otherwise; ``scan(path)``
parses a saved log of any size (or a pipe) as it reads it.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

# Xids that come from the application (bad kernel, illegal address), not from the hardware:
# worth a look, not a reason to drain the node. NVIDIA's Xid catalogue lists the rest as
# driver/hardware events (48 DBE ECC, 63/64 row remapping, 74 NVLink, 79 fell off the bus,
# 92/94/95 ECC, 119/120 GSP, ...).
APPLICATION_XIDS = frozenset({13, 31, 43, 45, 68, 69})

_XID = re.compile(r"NVRM: Xid \(PCI:([0-9A-Fa-f:.]+)\): (\d+)")
_AMDGPU = re.compile(r"\bamdgpu\b(?: ([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.\d):)?")
_AMD_FATAL = re.compile(r"(GPU reset|ring \S+ timeout|uncorrectable|\bRAS\b.*error|poison|"
                        r"GPU hang|fatal|failed to resume|mode1 reset)", re.I)
_AMD_WARN = re.compile(r"(page fault|\berror\b|VM_L2_PROTECTION_FAULT)", re.I)
_AER = re.compile(r"(AER:|PCIe Bus Error)")
_BDF = re.compile(r"([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.\d)")
_AER_SOURCE = re.compile(r"error received: ([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.\d)")
_PREFIX = re.compile(r"^\s*(?:\[\s*[0-9.]+\]\s*|<\d+>\s*|\d+,\d+,\d+,[^;]*;)")


@dataclass(frozen=True)
class Finding:
    kind: str       # "xid", "amdgpu", "aer"
    severity: str   # "fail" or "warning"
    device: str     # PCI address where the line names one
    detail: str     # "Xid 79", "GPU reset", "Corrected"
    line: str


def parse(text: str) -> list[Finding]:
    findings = []
    for raw in text.splitlines():
        line = _PREFIX.sub("", raw).strip()
        if not line:
            continue
        m = _XID.search(line)
        if m:
            code = int(m.group(2))
            findings.append(Finding("xid", "warning" if code in APPLICATION_XIDS else "fail",
                                    m.group(1).lower(), f"Xid {code}", line))
            continue
        if _AER.search(line):
            if "Uncorrect" in line or "Fatal" in line or "severity=Uncorrected" in line:
                # "Uncorrected (Non-Fatal)" holds "Fatal" too: the evidence must not make it fatal
                nonfatal = "Non-Fatal" in line or "NonFatal" in line
                sev, detail = "fail", ("Uncorrected (Non-Fatal)" if nonfatal else
                                       "Uncorrected (Fatal)" if "Fatal" in line else "Uncorrected")
            elif "Corrected" in line or "severity=Corrected" in line:
                sev, detail = "warning", "Corrected"
            else:
                continue  # "AER: enabled with IRQ ..." and similar boot chatter
            # the device that reported the error, else the port that logged it
            d = _AER_SOURCE.search(line) or _BDF.search(line)
            findings.append(Finding("aer", sev, d.group(1) if d else "", detail, line))
            continue
        m = _AMDGPU.search(line)
        if m:
            fatal, warn = _AMD_FATAL.search(line), _AMD_WARN.search(line)
            if fatal or warn:
                hit = fatal or warn
                assert hit is not None
                findings.append(Finding("amdgpu", "fail" if fatal else "warning", m.group(1) or "",
                                        hit.group(1), line))
    return findings


# A saved log is read this many bytes at a time and parsed a block of whole lines at a time, so a
# kern.log of gigabytes costs its findings, not several times its size in memory.
_CHUNK = 1 << 20
# Of a line longer than this (a file of NULs or random bytes has no line ends) only the start is
# kept: a kernel record is at most a few KiB.
_MAX_LINE = 1 << 16


def _scan(f: BinaryIO) -> list[Finding]:
    findings: list[Finding] = []
    rest = b""
    while chunk := f.read(_CHUNK):
        block = rest + chunk
        cut = block.rfind(b"\n") + 1
        if cut == 0:   # no line end yet: keep the line's start only
            rest = block[:_MAX_LINE]
            continue
        # cut after a newline byte, never inside a UTF-8 sequence
        findings += parse(block[:cut].decode(errors="replace"))
        rest = block[cut:][:_MAX_LINE]
    if rest:
        findings += parse(rest.decode(errors="replace"))
    return findings


def scan(path: str | Path) -> tuple[list[Finding] | None, str]:
    """(findings, ``path``) of a saved log, or (None, why it could not be read). The file is
    opened once, so a named pipe's writer is read, not lost to a first look at the file."""
    try:
        with open(path, "rb") as f:
            mode = os.fstat(f.fileno()).st_mode
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):   # /dev/kmsg would block, /dev/zero never end
                return None, f"cannot read {path}: a device, not saved kernel log text"
            return _scan(f), str(path)
    except OSError as e:
        return None, f"cannot read {path}: {e.strerror or e}"


def _read_kmsg(path: str = "/dev/kmsg", max_bytes: int = 16 << 20) -> str:
    """All records in the kernel ring buffer, without blocking at its end."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    chunks, total = [], 0
    try:
        while total < max_bytes:
            try:
                b = os.read(fd, 8192)  # one record per read
            except BlockingIOError:
                break  # reached the end of the buffer
            except OSError as e:
                if e.errno == 32:  # EPIPE: records were overwritten while reading; go on
                    continue
                raise
            if not b:
                break
            chunks.append(b.decode(errors="replace"))
            total += len(b)
    finally:
        os.close(fd)
    return "".join(chunks)


def read() -> tuple[str | None, str]:
    """(the live log's text, where it came from) or (None, why it could not be read); a saved
    log is ``scan``'s."""
    try:
        return _read_kmsg(), "/dev/kmsg"
    except OSError as e:
        kmsg_error = f"/dev/kmsg: {e.strerror or e}"
    try:
        out = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"{kmsg_error}; dmesg: {e}"
    if out.returncode != 0:
        return None, f"{kmsg_error}; dmesg: {out.stderr.strip() or f'exit {out.returncode}'}"
    return out.stdout, "dmesg"
