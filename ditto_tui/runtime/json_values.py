"""Node values as a person edits them: their JSON form, and edited JSON back in the types it replaces.

A node's input or output may hold pydantic models (``InferMessage``, ``ToolSpec``) and dataclasses. A
person sees and edits it as JSON (:func:`json_form`, the form the journal writes); the node gets the
edit in the types it had (:func:`retyped`), validated, so a bad edit is refused before the node runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pydantic

from ditto_tui.contracts import validation_summary
from ditto_tui.errors import ValidationError


def json_form(value: Any) -> Any:
    """``value`` as JSON data, as the journal writes it: a contract in its wire form, another pydantic
    model dumped by alias (``mode="json"``), a dataclass as the object of its fields, a tuple as an array.
    A value with no JSON form (a set, an arbitrary object) is left as it is."""
    to_wire = getattr(value, "to_wire", None)
    if isinstance(value, pydantic.BaseModel):
        return to_wire() if callable(to_wire) else value.model_dump(mode="json", by_alias=True)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: json_form(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {key if isinstance(key, str) else str(key): json_form(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_form(item) for item in value]
    return value


def retyped(value: Any, like: Any, where: str) -> Any:
    """The edited JSON ``value`` in the types of ``like``, the value it replaces.

    Where ``like`` held a pydantic model or a dataclass, the edit is validated into the same class; a
    tuple stays a tuple; anything else is kept as JSON. An element added to a list of one class takes
    that class. Raises :class:`ValidationError` naming the place (``where``) that does not fit.
    """
    if isinstance(like, pydantic.BaseModel):
        try:
            return type(like).model_validate(value)
        except pydantic.ValidationError as exc:
            raise ValidationError(
                f"{where} is not a valid {type(like).__name__}: {validation_summary(exc)}"
            ) from None
    if dataclasses.is_dataclass(like) and not isinstance(like, type):
        return _dataclass(value, like, where)
    if isinstance(like, Mapping) and isinstance(value, Mapping):
        return {key: retyped(item, like.get(key), f"{where}.{key}") for key, item in value.items()}
    if isinstance(like, list | tuple) and isinstance(value, list):
        items = [
            retyped(item, _element_like(like, index), f"{where}[{index}]") for index, item in enumerate(value)
        ]
        return tuple(items) if isinstance(like, tuple) else items
    return value


def _element_like(like: Sequence[Any], index: int) -> Any:
    """What element ``index`` of an edited list replaces: any element when all are of one class (the
    person may have removed, added or moved some), else the element at the same place."""
    kinds = {type(item) for item in like}
    if len(kinds) == 1:
        return like[0]
    return like[index] if index < len(like) else None


def _dataclass(value: Any, like: Any, where: str) -> Any:
    kind = type(like).__name__
    if not isinstance(value, Mapping):
        raise ValidationError(f"{where} must be an object (a {kind})")
    fields = {field.name for field in dataclasses.fields(like) if field.init}
    unknown = sorted(set(value) - fields)
    if unknown:
        raise ValidationError(f"{where}: a {kind} has no field {unknown[0]!r}")
    given = {name: retyped(item, getattr(like, name), f"{where}.{name}") for name, item in value.items()}
    try:
        return type(like)(**given)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{where} is not a valid {kind}: {exc}") from None


__all__ = ["json_form", "retyped"]
