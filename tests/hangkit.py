"""The fuzz tests' hang guard: a CPU-time alarm (SIGVTALRM) that interrupts a parser still
running after a few seconds of CPU. The regex engine checks for signals while it backtracks, so
an input that sends a regex into catastrophic backtracking fails in seconds, naming the parser
and the input's size. CPU time, not wall time, so a busy machine does not fail the tests."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

SMALL_LIMIT_S = 5.0
"""The CPU seconds an ordinary-sized input may take."""


class _Hang(BaseException):
    """Raised by the alarm; a BaseException so that no ``except Exception`` in a parser
    swallows it."""


@contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    """Raise :class:`_Hang` once the process has used ``seconds`` of CPU time in the block."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise _Hang

    previous = signal.signal(signal.SIGVTALRM, on_alarm)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


def bounded(fn: Callable[..., T], *args: Any, limit: float = SMALL_LIMIT_S, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, failing the example if it runs longer than ``limit`` seconds."""
    try:
        with _alarm(limit):
            return fn(*args, **kwargs)
    except _Hang:
        size = len(repr(args))
        name = getattr(fn, "__name__", repr(fn))
        raise AssertionError(
            f"{name} used more than {limit}s of CPU on {size} characters"
        ) from None
