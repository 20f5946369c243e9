"""JSON values: what ensure_json accepts, normalises and rejects, and where it says the problem is."""

from __future__ import annotations

import datetime
import enum
import math
from collections import OrderedDict
from decimal import Decimal
from types import MappingProxyType
from typing import Any

import pydantic
import pytest

from ditto_tui.contracts import MAX_JSON_DEPTH, ToolCall, ensure_json, ensure_json_object
from ditto_tui.errors import ValidationError


class Colour(enum.StrEnum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


def test_plain_json_is_copied_unchanged() -> None:
    value = {"s": "x", "i": 1, "f": 1.5, "b": True, "n": None, "l": [1, [2]], "d": {"k": {}}}
    copy = ensure_json(value)
    assert copy == value
    assert copy is not value and copy["l"] is not value["l"]


def test_tuples_mappings_and_subclasses_are_normalised() -> None:
    value = ensure_json({"t": (1, (2, 3)), "o": OrderedDict(a=1), "m": MappingProxyType({"b": 2})})
    assert value == {"t": [1, [2, 3]], "o": {"a": 1}, "m": {"b": 2}}
    assert type(value["o"]) is dict
    enums = ensure_json([Colour.RED, Level.HIGH])
    assert enums == ["red", 3]
    assert type(enums[0]) is str and type(enums[1]) is int


def test_bool_and_int_stay_distinct() -> None:
    assert ensure_json([True, 1]) == [True, 1]
    assert type(ensure_json(True)) is bool


def test_shared_but_acyclic_values_are_accepted() -> None:
    shared = [1]
    assert ensure_json({"a": shared, "b": shared}) == {"a": [1], "b": [1]}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"items": [1, 2, math.nan]}, "arguments.items[2]: NaN is not JSON-compatible"),
        ({"x": math.inf}, "arguments.x: inf is not JSON-compatible"),
        ([-math.inf], "arguments[0]: -inf is not JSON-compatible"),
        ({"b": b"raw"}, "arguments.b: bytes is not JSON-compatible"),
        ({"when": datetime.datetime(2024, 1, 1)}, "arguments.when: datetime is not JSON-compatible"),
        ({"s": {1, 2}}, "arguments.s: set is not JSON-compatible"),
        ({"f": len}, "arguments.f: builtin_function_or_method is not JSON-compatible"),
        ({"f": lambda: 1}, "arguments.f: function is not JSON-compatible"),
        ({"o": object()}, "arguments.o: object is not JSON-compatible"),
        ({"d": Decimal("1.5")}, "arguments.d: Decimal is not JSON-compatible"),
        ({"nested": {1: "x"}}, "arguments.nested: key 1 (int) is not a string"),
        ({"odd key": [math.nan]}, "arguments['odd key'][0]: NaN is not JSON-compatible"),
    ],
)
def test_non_json_values_are_rejected_with_their_path(value: object, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        ensure_json(value, where="arguments")
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)


def test_cycles_are_rejected() -> None:
    looped: dict[str, object] = {"a": [1]}
    looped["a"].append(looped)  # type: ignore[attr-defined]
    with pytest.raises(ValidationError, match=r"^value\.a\[1\]: a cycle is not JSON-compatible$"):
        ensure_json(looped)


def test_nesting_is_bounded() -> None:
    deep: object = "leaf"
    for _ in range(MAX_JSON_DEPTH + 1):
        deep = [deep]
    with pytest.raises(ValidationError, match="nesting deeper than"):
        ensure_json(deep)
    ensure_json([[["ok"]]])


def test_json_object_must_be_a_mapping() -> None:
    assert ensure_json_object({"a": (1,)}) == {"a": [1]}
    with pytest.raises(ValidationError, match="must be a JSON object, not list"):
        ensure_json_object([1])


def test_model_input_raises_pydantic_validation_error_with_the_path() -> None:
    with pytest.raises(pydantic.ValidationError) as caught:
        ToolCall.model_validate({"id": "c1", "name": "t", "arguments": {"items": [1, 2, math.nan]}})
    (error,) = caught.value.errors()
    assert error["loc"] == ("arguments",)
    assert "items[2]: NaN is not JSON-compatible" in error["msg"]


def test_model_input_is_copied_so_later_mutation_does_not_leak_in() -> None:
    arguments = {"path": "a.txt", "lines": [1, 2]}
    call = ToolCall(id="c1", name="head", arguments=arguments)
    arguments["lines"].append(3)  # type: ignore[attr-defined]
    assert call.arguments == {"path": "a.txt", "lines": [1, 2]}


class _Label(str):
    pass


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"a": math.inf}, "a: inf is not JSON-compatible"),
        ({1: "x"}, "key 1 (int) is not a string"),
        ({"when": b"x"}, "when: bytes is not JSON-compatible"),
        ({"a": {"b": {math.nan}}}, "a.b: set is not JSON-compatible"),
    ],
)
def test_tool_call_arguments_in_a_plain_dict_are_checked_like_any_json(
    arguments: dict[Any, Any], message: str
) -> None:
    with pytest.raises(pydantic.ValidationError) as caught:
        ToolCall.model_validate({"id": "c1", "name": "t", "arguments": arguments})
    (error,) = caught.value.errors()
    assert error["loc"] == ("arguments",)
    assert message in error["msg"]


def test_tool_call_arguments_come_out_as_plain_json_types() -> None:
    looped: dict[str, Any] = {}
    looped["self"] = looped
    with pytest.raises(pydantic.ValidationError, match="a cycle is not JSON-compatible"):
        ToolCall.model_validate({"id": "c1", "name": "t", "arguments": looped})
    call = ToolCall(
        id="c1", name="t", arguments={"flag": True, "none": None, "n": 3, _Label("k"): _Label("v")}
    )
    assert call.arguments == {"flag": True, "none": None, "n": 3, "k": "v"}
    assert [type(key) for key in call.arguments] == [str, str, str, str]
    assert type(call.arguments["k"]) is str
    assert type(ToolCall(id="c1", name="t", arguments=OrderedDict(a=1)).arguments) is dict
