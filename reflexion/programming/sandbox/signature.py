"""The entry point's signature in a Rust implementation, read for a judged test.

The judge calls the candidate through a proxy with the entry point's signature, so the types
are read into a small set of plain-data types (integers, floats, ``bool``, ``char``, strings,
vectors, slices, options, tuples, maps and sets, ``Box``, and references to these at the top
of a parameter or the result) and written back out from that reading. Nothing of the code's
own text reaches the judge's source. Standard library only: the sandbox's caller side uses it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_INTEGERS = ("i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize")
_SCALARS = frozenset((*_INTEGERS, "f32", "f64", "bool", "char", "String"))
_GENERICS = {
    "Vec": ("Vec", 1),
    "Option": ("Option", 1),
    "Box": ("Box", 1),
    "VecDeque": ("std::collections::VecDeque", 1),
    "HashSet": ("std::collections::HashSet", 1),
    "BTreeSet": ("std::collections::BTreeSet", 1),
    "HashMap": ("std::collections::HashMap", 2),
    "BTreeMap": ("std::collections::BTreeMap", 2),
}
_PATH_PREFIXES = frozenset({"std", "alloc", "collections", "string", "vec", "option", "boxed"})
_TUPLE_MAX = 8
_PARAMS_MAX = 16

_TOKEN = re.compile(r"\s*(::|->|'[A-Za-z_]\w*|[A-Za-z_]\w*|\d+|[^\sA-Za-z_\d])")


class UnsupportedSignature(ValueError):
    """The entry point cannot be called across processes (its types are not plain data)."""


@dataclass(frozen=True)
class RustType:
    """A plain-data Rust type: ``scalar`` (``name``), ``str``, ``generic`` (``name`` with
    ``args``), ``tuple`` (``args``), ``slice`` (``args[0]``) or ``ref`` (``args[0]``,
    ``mutable``)."""

    kind: str
    name: str = ""
    args: tuple[RustType, ...] = ()
    mutable: bool = False

    def render(self, lifetime: str = "") -> str:
        """The type as Rust source (a reference with ``lifetime`` when given)."""
        if self.kind == "scalar" or self.kind == "str":
            return self.name or "str"
        inner = ", ".join(a.render() for a in self.args)
        if self.kind == "generic":
            return f"{self.name}<{inner}>"
        if self.kind == "tuple":
            return f"({inner},)" if len(self.args) == 1 else f"({inner})"
        if self.kind == "slice":
            return f"[{inner}]"
        prefix = f"&{lifetime} " if lifetime else "&"
        return prefix + ("mut " if self.mutable else "") + self.args[0].render()

    def owned(self) -> RustType:
        """The owned type a value of this type is read into (``&str`` → ``String``, ``&[T]``
        → ``Vec<T>``, ``&T`` → ``T``)."""
        if self.kind == "ref":
            return self.args[0].owned()
        if self.kind == "str":
            return RustType("scalar", "String")
        if self.kind == "slice":
            return RustType("generic", "Vec", self.args)
        return self


@dataclass(frozen=True)
class Signature:
    """The entry point's name, parameter types and result type (``()`` when it has none)."""

    name: str
    params: tuple[RustType, ...]
    returns: RustType


def entry_signature(code: str, name: str) -> Signature:
    """Read ``fn name(...) -> T`` from ``code``, found after comments, string and character
    literals are blanked out (see :func:`blank`): its first definition at the top level of
    the source (outside every bracket, so not one in a macro or a module), passing over one
    under a ``#[cfg(...)]`` when there is another; failing a top-level one, the first at any
    depth (rustc then reports that the function is not where the tests call it).

    Raises:
        UnsupportedSignature: when there is no such function, or a type is not plain data.
    """
    source = blank(code)
    pattern = re.compile(rf"(?m)^[ \t]*(?:pub(?:\s*\([^)]*\))?\s+)?fn\s+{re.escape(name)}\b")
    found = list(pattern.finditer(source))
    top = [m for m in found if depth(source, m.start()) == 0]
    plain = [m for m in top if not _configured(source, m.start())]
    chosen = (plain or top or found)[:1]
    if not chosen:
        raise UnsupportedSignature(f"no top-level fn {name} in the implementation")
    tokens = _Tokens(source, chosen[0].end())
    if tokens.peek() == "<":
        tokens.lifetimes_only()
    tokens.expect("(")
    params: list[RustType] = []
    while tokens.peek() != ")":
        if len(params) >= _PARAMS_MAX:
            raise UnsupportedSignature(f"{name} takes more than {_PARAMS_MAX} parameters")
        tokens.pattern()
        params.append(tokens.type(top=True))
        if tokens.peek() != ")":
            tokens.expect(",")
    tokens.expect(")")
    returns = RustType("tuple")
    if tokens.peek() == "->":
        tokens.next()
        returns = tokens.type(top=True)
    if tokens.peek() != "{":
        raise UnsupportedSignature(f"{name}: expected its body after the signature")
    return Signature(name, tuple(params), returns)


_RAW_STRING = re.compile(r'(?:b|c)?r(#*)"')
_CHAR = re.compile(r"b?'(?:\\(?:u\{[0-9A-Fa-f_]{1,8}\}|x[0-9A-Fa-f]{2}|.)|[^\\'\n])'", re.S)


def blank(code: str) -> str:
    """``code`` with every comment (line, block, nested block, doc) and every string, raw
    string, byte and character literal replaced by spaces, newlines kept: what is left is
    code only, at the same offsets. A lifetime (``'a``) is kept."""
    out = list(code)
    i, n = 0, len(code)

    def clear(start: int, end: int) -> None:
        for k in range(start, min(end, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = code[i]
        if code.startswith("//", i):
            end = code.find("\n", i)
            end = n if end < 0 else end
            clear(i, end)
            i = end
        elif code.startswith("/*", i):
            depth, k = 1, i + 2
            while k < n and depth:
                if code.startswith("/*", k):
                    depth, k = depth + 1, k + 2
                elif code.startswith("*/", k):
                    depth, k = depth - 1, k + 2
                else:
                    k += 1
            clear(i, k)
            i = k
        elif (raw := _RAW_STRING.match(code, i)) and (i == 0 or not _word(code[i - 1])):
            close = '"' + raw.group(1)
            end = code.find(close, raw.end())
            end = n if end < 0 else end + len(close)
            clear(i, end)
            i = end
        elif c == '"' or (c in "bc" and code.startswith('"', i + 1) and not _prev_word(code, i)):
            k = i + (1 if c == '"' else 2)
            while k < n and code[k] != '"':
                k += 2 if code[k] == "\\" else 1
            clear(i, k + 1)
            i = k + 1
        elif (c == "'" or (c == "b" and code.startswith("'", i + 1))) and not _prev_word(code, i):
            char = _CHAR.match(code, i)
            if char:
                clear(i, char.end())
                i = char.end()
            else:
                i += 1  # a lifetime
        else:
            i += 1
    return "".join(out)


_ATTRIBUTES_BEFORE = re.compile(r"(?:#\[[^\[\]]*(?:\[[^\[\]]*\][^\[\]]*)*\]\s*)+$")


def _configured(code: str, at: int) -> bool:
    """Whether the item at ``at`` (in blanked code) carries a ``#[cfg(...)]`` attribute."""
    attributes = _ATTRIBUTES_BEFORE.search(code[max(0, at - 2000) : at])
    return bool(attributes and re.search(r"#\[\s*cfg\s*\(", attributes.group(0)))


def _word(c: str) -> bool:
    return c.isalnum() or c == "_"


def _prev_word(code: str, i: int) -> bool:
    return i > 0 and _word(code[i - 1])


def depth(code: str, at: int) -> int:
    """How many brackets are open at ``at`` in blanked code."""
    depth = 0
    for c in code[:at]:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
    return depth


class _Tokens:
    """A token stream over ``code`` from ``start`` (a small recursive-descent reader)."""

    def __init__(self, code: str, start: int) -> None:
        self.code = code
        self.at = start
        self._next: str | None = None

    def peek(self) -> str:
        if self._next is None:
            match = _TOKEN.match(self.code, self.at)
            if match is None:
                self._next = ""
            else:
                self._next = match.group(1)
                self.at = match.end()
        return self._next

    def next(self) -> str:
        token = self.peek()
        self._next = None
        return token

    def expect(self, want: str) -> None:
        got = self.next()
        if got != want:
            raise UnsupportedSignature(f"expected {want!r} in the signature, found {got!r}")

    def lifetimes_only(self) -> None:
        """Generic parameters ``<'a, 'b>``; type parameters are not plain data."""
        self.expect("<")
        while self.peek() != ">":
            token = self.next()
            if not token.startswith("'") and token != ",":
                raise UnsupportedSignature("generic functions cannot be judged")
        self.expect(">")

    def pattern(self) -> None:
        """Skip a parameter's pattern up to its ``:``."""
        depth = 0
        while True:
            token = self.next()
            if token == "" or (token == "self" and depth == 0):
                raise UnsupportedSignature("methods cannot be judged")
            if token in "([{":
                depth += 1
            elif token in ")]}":
                depth -= 1
            elif token == ":" and depth == 0:
                return

    def type(self, *, top: bool = False) -> RustType:
        token = self.next()
        if token == "&":
            if not top:
                raise UnsupportedSignature("references inside other types cannot be judged")
            if self.peek().startswith("'"):
                self.next()
            mutable = self.peek() == "mut"
            if mutable:
                self.next()
            inner = self._unsized() if self.peek() in ("str", "[") else self.type()
            return RustType("ref", args=(inner,), mutable=mutable)
        if token == "(":
            items: list[RustType] = []
            while self.peek() != ")":
                items.append(self.type())
                if self.peek() != ")":
                    self.expect(",")
            self.expect(")")
            if len(items) > _TUPLE_MAX:
                raise UnsupportedSignature(f"tuples of more than {_TUPLE_MAX} cannot be judged")
            return RustType("tuple", args=tuple(items))
        return self._named(token)

    def _unsized(self) -> RustType:
        if self.next() == "str":
            return RustType("str")
        item = self.type()
        self.expect("]")
        return RustType("slice", args=(item,))

    def _named(self, token: str) -> RustType:
        while self.peek() == "::":
            if token not in _PATH_PREFIXES:
                raise UnsupportedSignature(f"the type path {token}:: cannot be judged")
            self.next()
            token = self.next()
        if token in _SCALARS:
            return RustType("scalar", token)
        if token not in _GENERICS:
            shown = token if re.fullmatch(r"\w+", token) else repr(token)
            raise UnsupportedSignature(f"the type {shown} is not plain data")
        path, arity = _GENERICS[token]
        self.expect("<")
        args = [self.type()]
        while self.peek() == ",":
            self.next()
            if self.peek() == ">":
                break
            args.append(self.type())
        self.expect(">")
        if len(args) != arity:
            raise UnsupportedSignature(f"{token} takes {arity} type argument(s)")
        return RustType("generic", path, tuple(args))
