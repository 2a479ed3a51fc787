"""The judge-candidate codec: plain data round-trips exactly, and whatever ``encode`` could
not have written (forged tags, unhashable or colliding members, subclasses, deep nesting) is
refused on both sides with the error the judge expects."""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

import pytest

from reflexion.programming.sandbox.plain import DEPTH, NotPlain, decode, encode

PLAIN_VALUES: list[Any] = [
    None,
    True,
    0,
    -(2**70),
    1.5,
    "",
    "ünï",
    b"\x00\xff",
    [],
    (),
    (1,),
    [1, (2, 3), [4]],
    {1, 2},
    frozenset({"a"}),
    {},
    {"a": [1, {2: 3}], (1, 2): b"x", None: frozenset()},
    {True: "bool key", 2: "int key"},
]


@pytest.mark.parametrize("value", PLAIN_VALUES, ids=repr)
def test_plain_values_round_trip_with_their_types(value: Any) -> None:
    back = decode(encode(value))
    assert back == value and type(back) is type(value)


def test_bool_and_int_stay_apart_and_nan_survives() -> None:
    assert type(decode(encode([True, 1]))[0]) is bool
    assert type(decode(encode((1, True)))[0]) is int
    assert math.isnan(decode(encode(float("nan"))))


@pytest.mark.parametrize(
    "value",
    [OrderedDict(a=1), type("Str", (str,), {})("x"), object(), [1, {2: object()}], 1j],
    ids=["dict subclass", "str subclass", "object", "nested object", "complex"],
)
def test_what_is_not_plain_is_refused_by_encode(value: Any) -> None:
    with pytest.raises(NotPlain):
        encode(value)


@pytest.mark.parametrize(
    "data",
    [
        {"d": [["ab"]]},  # a pair that is not a pair
        {"d": ["ab"]},
        {"d": [[1, 2, 3]]},
        {"t": "x"},  # a tag without a list
        {"x": [1]},  # an unknown tag
        {"t": [1], "s": [2]},  # two tags
        {"b": "zz"},  # not hex
        {"d": [[[1], 2]]},  # an unhashable key
        {"s": [{"s": []}]},  # an unhashable member
        {"s": [True, 1]},  # members that collapse
        {"d": [[True, "x"], [1, "y"]]},  # keys that collapse
    ],
    ids=repr,
)
def test_what_encode_could_not_have_written_is_refused_by_decode(data: Any) -> None:
    with pytest.raises(ValueError):
        decode(data)


@pytest.mark.parametrize("make", [list, tuple, lambda x: {"k": x}], ids=["list", "tuple", "dict"])
def test_nesting_is_bounded_on_both_sides(make: Any) -> None:
    deep: Any = 0
    for _ in range(DEPTH + 1):
        deep = make([deep]) if make is not tuple else (deep,)
    with pytest.raises(NotPlain):
        encode(deep)
    forged: Any = 0
    for _ in range(DEPTH + 2):
        forged = [forged]
    with pytest.raises(ValueError):
        decode(forged)
