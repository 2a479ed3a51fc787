"""How ``rustc`` runs in the sandbox: the real compiler behind rustup's proxy, the clean
environment it gets, and the private file-system view it compiles in.

The code a model writes can read files while it is compiled (``include_str!``,
``include_bytes!``, ``#[path]`` modules, ``global_asm!``'s ``.incbin``) and read the
environment (``env!``, ``option_env!``). So the compiler runs like the candidate's own
process: under the suite's unprivileged uid (as root), with no network, in a directory that
holds the source it compiles and nothing else, with only the variables the toolchain needs.

rustup installs the toolchain under the caller's home (``/root/.rustup`` as root), which
another uid cannot traverse. Its real compiler, found once with ``rustc --print sysroot``,
is bind-mounted read-only at a directory of the suite's own, inside a private mount
namespace of the compile (the child side does the mounts: ``child.py``), and the caller's
home is covered by an empty file system there. No copy, no package beyond the kernel's own
namespaces.
"""

from __future__ import annotations

import functools
import os
import subprocess
from dataclasses import dataclass
from typing import Any

from reflexion.programming.sandbox.child import reachable_by_others
from reflexion.programming.sandbox.jail import inside

COMPILE_PATH = "/usr/local/bin:/usr/bin:/bin"
"""Where the compile finds the linker driver (``cc``) and what it runs (``ld``, ``as``)."""

_PRINT_TIMEOUT_S = 60.0

View = dict[str, Any]
"""A compile's file-system view, as ``child.py`` reads it: ``bind`` (``[source, mount
point]`` or ``None``) and ``hide`` (paths covered by an empty read-only file system)."""


@dataclass(frozen=True)
class Toolchain:
    """The compiler a suite runs, resolved once per process from the ``rustc`` on ``PATH``."""

    sysroot: str
    """The toolchain's root: ``bin/rustc``, ``lib/librustc_driver-*.so``, ``lib/rustlib/``."""
    compiler: str
    """The real compiler (``<sysroot>/bin/rustc``; rustup's proxy needs the caller's home and
    environment, so it is not run in the sandbox)."""

    @property
    def reachable(self) -> bool:
        """Whether an unprivileged uid can reach the toolchain without a bind mount."""
        return reachable_by_others(self.sysroot) and reachable_by_others(
            os.path.dirname(self.compiler)
        )


@functools.cache
def resolve(rustc: str) -> Toolchain:
    """The toolchain behind ``rustc`` (a rustup proxy or a real compiler). It asks the proxy
    itself with the caller's environment (trusted: no candidate input), as a user running
    ``rustc`` would get it, so rustup's default and ``RUSTUP_TOOLCHAIN`` are honoured."""
    real = os.path.realpath(rustc)
    try:
        printed = subprocess.run(
            [rustc, "--print", "sysroot"],
            capture_output=True,
            text=True,
            timeout=_PRINT_TIMEOUT_S,
            cwd="/",
            check=False,
        )
        sysroot = printed.stdout.strip() if printed.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired):
        sysroot = ""
    compiler = os.path.join(sysroot, "bin", "rustc") if sysroot else ""
    if not (compiler and os.path.isfile(compiler) and os.access(compiler, os.X_OK)):
        compiler = real  # no sysroot printed: the given compiler, beside its libraries
        sysroot = os.path.dirname(os.path.dirname(real))
    return Toolchain(os.path.realpath(sysroot), os.path.realpath(compiler))


def compile_env(directory: str) -> dict[str, str]:
    """The compile's whole environment, each variable for a reason:

    - ``PATH``: the linker driver ``cc`` and the tools it runs (system directories only);
    - ``HOME`` and ``TMPDIR``: the compile's own directory, where rustc's temporary link
      files go, rather than the caller's home or a shared ``/tmp``;
    - ``LC_ALL``: the linker's messages in one language and encoding on every machine.

    Nothing else: no ``RUSTUP_*``/``CARGO_*`` (the real compiler needs neither), no key of
    the caller's, so ``env!``/``option_env!`` in the candidate find nothing of theirs.
    """
    return {"PATH": COMPILE_PATH, "HOME": directory, "TMPDIR": directory, "LC_ALL": "C.UTF-8"}


def compile_view(toolchain: Toolchain, mountpoint: str, keep: str, hide: list[str]) -> View:
    """What the compile's private mount namespace holds: the toolchain read-only at
    ``mountpoint`` (an empty directory of the suite's) when another uid could not reach it
    where it is, or it lies under a hidden path (a home others may read); and an empty
    read-only file system over each path in ``hide`` and over the caller's home (unless
    ``keep``, the compile's own directory, lies inside it). ``child.py`` applies it before the
    uid change."""
    covered = [p for p in hide if p]
    home = os.path.realpath(os.path.expanduser("~"))
    if home != "/" and os.path.isdir(home) and not inside(os.path.realpath(keep), home):
        covered.append(home)
    hidden = any(
        inside(os.path.realpath(toolchain.sysroot), p)
        or inside(os.path.realpath(toolchain.compiler), p)
        for p in covered
    )
    bind = None if toolchain.reachable and not hidden else [toolchain.sysroot, mountpoint]
    return {"bind": bind, "hide": covered}


def compiler_in(toolchain: Toolchain, view: View) -> str:
    """The compiler's path inside the compile's view (under the mount point when bound)."""
    bind = view["bind"]
    if not bind:
        return toolchain.compiler
    return os.path.join(bind[1], os.path.relpath(toolchain.compiler, toolchain.sysroot))
