"""A computation handed to a forked child process while the caller does another: a second core
for numpy work that splits into independent halves (``changepoint.may_change``)."""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from typing import Any, TypeVar

from clusterbench.ranks.signals import die_with_parent

T = TypeVar("T")


def in_child(fn: Callable[..., T], *args: Any) -> Callable[[], T]:
    """Start ``fn(*args)`` in a forked child; the function returned waits for its result. Where
    the fork fails, or the child dies or raises, it is computed here instead, when asked for: the
    same result either way, for a pure ``fn``."""
    try:
        r, w = os.pipe()
    except OSError:
        return lambda: fn(*args)
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return lambda: fn(*args)
    if pid == 0:   # the child: compute, write, leave without the parent's exit handlers
        code = 1
        try:
            os.close(r)
            die_with_parent(os.getppid())
            data = pickle.dumps(fn(*args), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(w, "wb") as f:
                f.write(data)
            code = 0
        finally:
            os._exit(code)
    os.close(w)

    def result() -> T:
        with os.fdopen(r, "rb") as f:
            data = f.read()
        _, status = os.waitpid(pid, 0)
        if status == 0 and data:
            return pickle.loads(data)  # type: ignore[no-any-return]
        return fn(*args)

    return result
