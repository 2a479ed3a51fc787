"""The namespaces a sandboxed child enters (the child side: standard library only, loaded by
``child.py``): a network namespace for every process, and for a compile a private mount
namespace whose view holds the toolchain and hides the caller's home and the other compile's
directory (what the view holds is decided on the caller side, in ``toolchain.py``)."""

from __future__ import annotations

import contextlib
import ctypes
import os
from typing import Any

_CLONE_NEWUSER = 0x10000000

_CLONE_NEWNET = 0x40000000

_CLONE_NEWNS = 0x00020000

_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8

_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18


def isolate_network() -> bool:
    """Enter a new network namespace (only a downed loopback): directly as root, otherwise
    inside a new user namespace that maps the caller's own uid/gid; False if impossible."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return False
    if not hasattr(libc, "unshare"):  # not Linux
        return False
    if os.geteuid() == 0:
        return int(libc.unshare(_CLONE_NEWNET)) == 0
    uid, gid = os.geteuid(), os.getegid()
    if int(libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET)) != 0:
        return False
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        with contextlib.suppress(OSError), open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)
    return True


def enter_view(view: dict[str, Any]) -> bool:
    """A compile's private mount and network namespaces: the toolchain bound read-only at
    its mount point, an empty read-only file system over each hidden path. As root every
    step must succeed (or the child fails before the compiler starts). Without root it needs
    an unprivileged user namespace; where the kernel refuses one, the compile keeps the
    caller's view (the toolchain where it is) and only the network is cut, if that can be:
    False."""
    libc = ctypes.CDLL(None, use_errno=True)
    root = os.geteuid() == 0
    if root:
        _check(libc.unshare(_CLONE_NEWNS | _CLONE_NEWNET), "unshare")
    else:
        uid, gid = os.geteuid(), os.getegid()
        if int(libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWNET)) != 0:
            isolate_network()
            return False
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
    _check(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "mount --make-rprivate /")
    bind = view.get("bind")
    if bind:
        source, target = (os.fsencode(p) for p in bind)
        _check(libc.mount(source, target, None, _MS_BIND | _MS_REC, None), "bind the toolchain")
        flags = _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV
        done = int(libc.mount(None, target, None, flags, None)) == 0
        if root:  # a user namespace may not drop flags locked by its parent: read-only anyway
            _check(int(not done), "make the toolchain read-only")
    for path in view.get("hide", []):
        if not os.path.isdir(path):
            continue
        flags = _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
        hidden = libc.mount(b"tmpfs", os.fsencode(path), b"tmpfs", flags, b"size=4k,mode=0555")
        _check(hidden, f"hide {path}")
    return True


def _check(result: int, what: str) -> None:
    if int(result) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def in_view(config: dict[str, Any], command: list[str]) -> list[str]:
    """``command`` with the compiler's path back where the toolchain lies, when the compile's
    view could not be made (without root and without user namespaces)."""
    bind = (config.get("view") or {}).get("bind")
    if not bind or config.get("view_applied", True) or not command:
        return command
    source, target = bind
    if command[0].startswith(target + os.sep):
        return [source + command[0][len(target) :], *command[1:]]
    return command
