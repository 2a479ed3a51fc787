"""What a suite's compiles leave and keep: each compile's own directory (:class:`Build`), its
output copied out of it (:func:`take`), and the compiled judges kept in the caller's memory
between suites (:data:`KEPT`), where no sandboxed code can reach them."""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from collections import OrderedDict
from dataclasses import dataclass

from reflexion.programming.sandbox.rust import rustc_flags


class Binaries:
    """Compiled judges by source, in the caller's memory (a few, least recently used first)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.lock = threading.Lock()
        self.binaries: OrderedDict[str, bytes] = OrderedDict()

    @staticmethod
    def _key(rustc: str, source: str) -> str:
        flags = rustc_flags("judge")
        return hashlib.sha256("\0".join((rustc, *flags, source)).encode()).hexdigest()

    def restore(self, rustc: str, source: str, path: str, mode: int) -> bool:
        """Write the binary compiled from ``source`` to ``path``; False if there is none."""
        key = self._key(rustc, source)
        with self.lock:
            binary = self.binaries.get(key)
            if binary is None:
                return False
            self.binaries.move_to_end(key)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(binary)
        os.chmod(path, mode)  # whatever the umask
        return True

    def keep(self, rustc: str, source: str, path: str) -> None:
        with open(path, "rb") as handle:
            binary = handle.read()
        with self.lock:
            self.binaries[self._key(rustc, source)] = binary
            while len(self.binaries) > self.size:
                self.binaries.popitem(last=False)


KEPT = Binaries(32)
MODES = {"judge": 0o700}
"""Binaries kept between suites, and their modes: the judge the caller's alone until it is
sealed for the judge's uid, execute-only (see
:meth:`Sandbox.compile_rust`)."""


@dataclass(frozen=True)
class Build:
    """One compile's directory, the output it writes there, and the uid it runs under."""

    directory: str
    output: str
    uid: int | None


def take(built: str, path: str, mode: int) -> None:
    """Copy a compile's output (a regular file, not followed if a link) to ``path``, owned by
    the caller, with ``mode``; nothing when there is no such file."""
    try:
        source = os.open(built, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return
    with os.fdopen(source, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return
        binary = handle.read()
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(descriptor, "wb") as out:
        out.write(binary)
    os.chmod(path, mode)  # whatever the umask
