"""A text file a user names (a profile, a hostfile, a topology, a transfer config): read whole as
UTF-8, or one line saying why it cannot be."""

from __future__ import annotations

import errno
import os
import stat

from clusterbench.errors import UsageError


def read_user_text(path: str | os.PathLike[str], what: str) -> str:
    """The text of ``path``; ``what`` names it in the error (``hostfile``, ``--topology``)."""
    try:
        # O_NONBLOCK: opening a FIFO would wait for a writer; it changes nothing for a file
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
            if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):   # /dev/zero never ends
                raise UsageError(f"cannot read {what} {path}: a device, not a text file")
            # a pipe (--hostfile <(scontrol show hostnames)) is read to its end; a FIFO that no
            # writer has open reads as empty instead of waiting for one
            os.set_blocking(fd, True)
            # newline="": the text as written; universal newlines would turn a lone CR into a
            # line break that the program reading the file (mpirun, Slurm) does not see
            f = open(fd, encoding="utf-8", newline="")
        except BaseException:
            os.close(fd)
            raise
        with f:
            return f.read()
    except OSError as e:
        raise UsageError(f"cannot read {what} {path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise UsageError(f"{what} {path}: not UTF-8 text (byte {e.start})") from None
