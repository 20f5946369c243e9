"""Values as a durable run stores them: JSON that keeps the types of ditto-tui's own values.

A node's output, a request, a decision and an event cross processes and outlive them, so they are stored
as JSON. Plain JSON values stay as they are; a tuple, bytes, and a pydantic model or dataclass defined in
ditto-tui (an :class:`~ditto_tui.contracts.ExternalResult`, an approval request, an event) are tagged so
they come back as the same type. Nothing else is rebuilt: a tag naming a type outside ditto-tui, or a
type that is neither a model nor a dataclass, is refused, so stored data never chooses what code runs.
"""

from __future__ import annotations

import base64
import dataclasses
import importlib
from collections.abc import Mapping
from typing import Any

import pydantic

from ditto_tui.errors import ValidationError

TAG = "__ditto__"
_PACKAGE = "ditto_tui."


def dump(value: Any) -> Any:
    """``value`` as JSON (see the module's documentation); ValidationError for what JSON cannot hold."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list):
        return [dump(item) for item in value]
    if isinstance(value, tuple):
        return {TAG: "tuple", "items": [dump(item) for item in value]}
    if isinstance(value, Mapping):
        items = {_key(key): dump(item) for key, item in value.items()}
        return {TAG: "dict", "items": items} if TAG in items else items
    if isinstance(value, bytes | bytearray):
        return {TAG: "bytes", "b64": base64.b64encode(bytes(value)).decode("ascii")}
    kind = type(value)
    name = f"{kind.__module__}:{kind.__qualname__}"
    if isinstance(value, pydantic.BaseModel) and _ours(kind):
        return {TAG: "model", "type": name, "data": dump(value.model_dump(mode="json", by_alias=True))}
    if dataclasses.is_dataclass(value) and _ours(kind):
        fields = {
            f.name: dump(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.init and f.metadata.get("stored", True)
        }
        return {TAG: "dataclass", "type": name, "fields": fields}
    raise ValidationError(f"a durable run cannot store a value of type {kind.__qualname__}")


def load(data: Any) -> Any:
    """The value :func:`dump` stored; raises ValidationError for a tag it did not write."""
    if isinstance(data, list):
        return [load(item) for item in data]
    if not isinstance(data, dict):
        return data
    tag = data.get(TAG)
    if tag is None:
        return {key: load(item) for key, item in data.items()}
    if tag == "dict":
        return {key: load(item) for key, item in data["items"].items()}
    if tag == "tuple":
        return tuple(load(item) for item in data["items"])
    if tag == "bytes":
        return base64.b64decode(data["b64"])
    if tag == "model":
        model = _type(data.get("type"))
        if not (isinstance(model, type) and issubclass(model, pydantic.BaseModel)):
            raise ValidationError(f"stored value names {data.get('type')!r}, which is not a model")
        return model.model_validate(load(data["data"]))
    if tag == "dataclass":
        kind = _type(data.get("type"))
        if not (isinstance(kind, type) and dataclasses.is_dataclass(kind)):
            raise ValidationError(f"stored value names {data.get('type')!r}, which is not a dataclass")
        return kind(**{key: load(item) for key, item in data["fields"].items()})
    raise ValidationError(f"stored value has an unknown tag {tag!r}")


def _key(key: object) -> str:
    if not isinstance(key, str):
        raise ValidationError(f"a durable run stores mappings with text keys, not {type(key).__name__}")
    return key


def _ours(kind: type) -> bool:
    return kind.__module__.startswith(_PACKAGE)


def _type(name: object) -> object:
    if not isinstance(name, str) or ":" not in name:
        raise ValidationError(f"stored value names no type: {name!r}")
    module_name, _, qualname = name.partition(":")
    if not module_name.startswith(_PACKAGE):
        raise ValidationError(f"stored value names {name!r}, outside ditto-tui: refused")
    found: object = importlib.import_module(module_name)
    for part in qualname.split("."):
        if part.startswith("_") and part != "__init__":
            raise ValidationError(f"stored value names a private type {name!r}: refused")
        found = getattr(found, part)
    return found
