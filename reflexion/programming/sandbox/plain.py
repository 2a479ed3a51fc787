"""Plain data between a judge process and its candidate process (standard library only).

The candidate's functions run in the candidate process; the judge sees them as proxies
(:class:`Proxy`) whose arguments and results cross a pipe as JSON lines holding plain data
only: None, bool, int, float, str, bytes, and lists, tuples, dicts and sets of these, of
exactly those types. An object that compares equal to everything, or any other object the
candidate builds, cannot reach the judge.
"""

from __future__ import annotations

import builtins
import json
import os
from typing import Any

CHANNEL_ENV = "REFLEXION_CHANNEL_FDS"
"""``read_fd,write_fd`` of the pipes between a judge and its candidate process."""

MESSAGE_BYTES = 16 * 1024 * 1024
"""The longest message on the judge-candidate channel."""

DEPTH = 100
"""How deeply plain data may nest (a dict counts twice: its pairs are one level)."""

PLAIN = "None, bool, int, float, str, bytes, and lists, tuples, dicts and sets of these"


class NotPlain(TypeError):
    """A value that may not cross between the candidate and the judge."""


_TAGS: dict[type, str] = {tuple: "t", set: "s", frozenset: "fs"}
"""The containers sent as ``{tag: [items]}``; dicts go as ``{"d": [[key, value], ...]}`` and
bytes as ``{"b": hex}``."""

_TYPES = {tag: kind for kind, tag in _TAGS.items()}


def _leaf(value: Any, depth: int, error: type[Exception]) -> bool:
    """Whether ``value`` crosses as it is (``None``, a bool, int, float or str); raises
    ``error`` when the data around it is nested past ``DEPTH``."""
    if depth > DEPTH:
        raise error("data nested too deeply")
    return value is None or type(value) in (bool, int, float, str)


def encode(value: Any, depth: int = 0) -> Any:
    """Plain data as JSON-ready values (tuples, sets, dicts with any keys and bytes tagged);
    anything else, including subclasses of the plain types, raises :class:`NotPlain`."""
    if _leaf(value, depth, NotPlain):
        return value
    kind = type(value)
    if kind is list:
        return [encode(v, depth + 1) for v in value]
    if kind in _TAGS:
        return {_TAGS[kind]: encode(list(value), depth)}
    if kind is dict:
        return {"d": encode([[k, v] for k, v in value.items()], depth)}
    if kind is bytes:
        return {"b": value.hex()}
    raise NotPlain(f"a value of type {kind.__name__}")


def decode(data: Any, depth: int = 0) -> Any:
    """The inverse of :func:`encode`; anything it could not have written raises ValueError."""
    if _leaf(data, depth, ValueError):
        return data
    kind = type(data)
    if kind is list:
        return [decode(v, depth + 1) for v in data]
    if kind is dict and len(data) == 1:
        ((tag, body),) = data.items()
        if tag == "b" and type(body) is str:
            return bytes.fromhex(body)
        items = decode(body, depth) if type(body) is list else None
        if items is not None and tag in _TYPES:
            return _built(_TYPES[tag], items)
        if items is not None and tag == "d" and all(type(p) is list and len(p) == 2 for p in items):
            return _built(dict, items)
    raise ValueError("not plain data")


def _built(kind: Any, items: list[Any]) -> Any:
    """A tuple, set or dict of decoded items; members it cannot hold (unhashable) or that
    collapse into one another (equal, which :func:`encode` never sends) raise ValueError."""
    try:
        made = kind(items)
    except TypeError:
        raise ValueError("not plain data") from None
    if len(made) != len(items):
        raise ValueError("not plain data")
    return made


class Channel:
    """One end of the judge-candidate pipes: JSON lines, each at most ``MESSAGE_BYTES``."""

    def __init__(self) -> None:
        read_fd, write_fd = (int(x) for x in os.environ.pop(CHANNEL_ENV).split(","))
        self._reader = os.fdopen(read_fd, "rb")
        self._write_fd = write_fd

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message) + "\n").encode()
        while data:
            data = data[os.write(self._write_fd, data) :]

    def receive(self) -> dict[str, Any] | None:
        """The next message; ``None`` when the other side is gone or wrote nonsense."""
        line = self._reader.readline(MESSAGE_BYTES + 1)
        if not line.endswith(b"\n"):
            return None
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            return None
        return message if type(message) is dict else None


def answer(namespace: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """Call one of the candidate's functions for the judge."""
    try:
        function = namespace[str(request["call"])]
        args, kwargs = decode(request["args"]), decode(request["kwargs"])
        result = function(*args, **kwargs)
    except BaseException as exc:
        return {"raised": outcome(exc)}
    try:
        return {"value": encode(result)}
    except NotPlain as exc:
        return {"not_plain": str(exc)}
    except BaseException as exc:
        return {"raised": outcome(exc)}


def outcome(exc: BaseException) -> dict[str, Any]:
    """An exception of the candidate as data: its type name, message and, for sys.exit, the
    exit status."""
    if isinstance(exc, SystemExit):
        code = exc.code
        return {"exit": 0 if code is None else code if type(code) is int else 1}
    try:
        message = str(exc)
    except BaseException:
        message = ""
    return {"type": type(exc).__name__, "message": message[:2000]}


class CandidateGone(Exception):
    """The candidate process ended or broke the channel: the parent gives the reason."""


_STEERING = (StopIteration, StopAsyncIteration, GeneratorExit)
"""Exceptions that steer the control flow of the code that catches them (an iterator's end):
one of these from the candidate's call would end the test's ``all(map(...))`` early, so it
reaches the test as a ``RuntimeError`` instead, as PEP 479 does for generators."""


def rebuild(outcome: Any) -> BaseException:
    """The judge's exception for a candidate's one: a builtin ``Exception`` type by name (so a
    test can catch ``ValueError``), a ``RuntimeError`` for one that would steer the test's
    iteration (:data:`_STEERING`), else an exception class of that name."""
    if type(outcome) is not dict:
        return CandidateGone()
    if "exit" in outcome:
        return SystemExit(outcome["exit"] if type(outcome["exit"]) is int else 1)
    name, message = str(outcome.get("type", "Exception")), str(outcome.get("message", ""))
    found = getattr(builtins, name, None)
    if isinstance(found, type) and issubclass(found, _STEERING):
        return RuntimeError(f"the candidate raised {name}: {message}"[:2000])
    if (
        isinstance(found, type)
        and issubclass(found, Exception)
        and not issubclass(found, (SystemExit, KeyboardInterrupt))
    ):
        try:
            error: BaseException = found(message)
            return error
        except Exception:
            pass
    if not name.isidentifier():
        name = "Exception"
    made: type[Exception] = type(name, (Exception,), {})
    return made(message)


class Proxy:
    """A candidate function as the judge sees it: arguments go over as plain data, the
    result comes back as plain data (or the exception it raised)."""

    def __init__(self, name: str, channel: Channel) -> None:
        self._name = name
        self._channel = channel

    def __repr__(self) -> str:
        return f"<candidate function {self._name}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            request = {"call": self._name, "args": encode(list(args)), "kwargs": encode(kwargs)}
        except NotPlain as exc:
            raise TypeError(
                f"{self._name} was called with {exc}: only {PLAIN} can be passed to the candidate"
            ) from None
        self._channel.send(request)
        reply = self._channel.receive()
        if reply is None:
            raise CandidateGone()
        if "value" in reply:
            try:
                return decode(reply["value"])
            except ValueError:
                raise CandidateGone() from None
        if "not_plain" in reply:
            raise TypeError(
                f"{self._name} returned {str(reply['not_plain'])[:80]}: only {PLAIN} count "
                "as results"
            )
        raise rebuild(reply.get("raised"))
