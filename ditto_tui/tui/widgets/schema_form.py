"""A form generated from a JSON Schema, with a JSON editor for whatever a form cannot show faithfully.

Each property gets an editor for its kind (:func:`field_kind`): a switch, a choice, a one-line input for a
number, one line per item for a list of scalars, a bordered group for a nested object, one group per item
(with *Add item* and *Remove item* buttons) for a list of objects, and JSON for anything else. Each label
shows the property's name, its ``title`` and kind, and under it the ``description``, all as plain text with
hidden characters made visible (they come from whoever wrote the schema).

Strings are edited as text, never as a JSON literal: what is typed is the value, quotes and backslashes
included. :func:`uses_text_area` picks the editor of a string:

- a multi-line text area when the value holds a newline or a tab, or is longer than :data:`LONG_TEXT`
  characters;
- otherwise a one-line input when the schema names a ``format`` (dates, addresses, URIs are short) or a
  ``maxLength`` of at most :data:`LONG_MAX_LENGTH`;
- otherwise a text area when the schema has a larger ``maxLength`` or a ``contentMediaType``, or the
  property's last word is one of :data:`TEXT_WORDS` (``content``, ``file_text``, ``commitMessage``);
- otherwise a one-line input. Pasting text with a newline into a one-line input turns it into a text area,
  so nothing after the first line is lost.

A string holding any other hidden character (a bidi control, a zero-width space, ``\\r``) is edited as
escaped JSON, so the approver sees it. Values round-trip exactly. An optional field left empty is left out
of the arguments, except when the arguments already held that empty value (``""``, ``[]``), which stays.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Literal

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Button, Input, Label, Select, Static, Switch, TextArea

from ditto_tui.sanitize import sanitize_public_message
from ditto_tui.schema import MAX_VALIDATED_DEPTH, compile_validator, nesting_depth, schema_errors
from ditto_tui.tui.faults import Guarded
from ditto_tui.tui.text import editable_json, is_plain_line, render_untrusted

__all__ = [
    "MAX_DEPTH",
    "MAX_ENUM_OPTIONS",
    "MAX_FIELDS",
    "MAX_NESTING",
    "MAX_VALIDATED_DEPTH",
    "ArgumentsValidator",
    "FieldKind",
    "FieldSpec",
    "FormResult",
    "LONG_MAX_LENGTH",
    "LONG_TEXT",
    "SchemaForm",
    "TEXT_WORDS",
    "compile_validator",
    "field_kind",
    "json_only_reason",
    "nesting_depth",
    "plan_fields",
    "schema_errors",
    "uses_text_area",
]

MAX_FIELDS = 60
"""A schema with more fields than this is edited as JSON."""

MAX_NESTING = 4
"""Objects nested deeper than this are edited as JSON."""

MAX_ENUM_OPTIONS = 200
"""An enum with more values than this is edited as JSON."""

MAX_DEPTH = 8
"""The deepest structure the form takes on (ADVERSARIAL U-10): a value nesting more levels of objects
and arrays than this, or a schema nesting more levels of subschemas (each level is two steps of its
JSON, ``properties`` then the member), opens in the JSON editor with a note saying why."""

LONG_TEXT = 60
"""A string value longer than this is edited in a multi-line text area."""

LONG_MAX_LENGTH = 200
"""A string whose schema allows more characters than this is edited in a multi-line text area."""

TEXT_WORDS = frozenset(
    {"body", "code", "content", "diff", "message", "patch", "prompt", "script", "source", "text"}
)
"""The last words of property names that usually hold long text, edited in a multi-line text area."""

MAX_DESCRIPTION = 1000
"""The most characters of a description shown under a label; the rest is counted, not shown."""

ArgumentsValidator = Callable[[Mapping[str, Any]], None]
"""A tool's own ``validate(args)``: raises to refuse the arguments."""

_COMBINATORS = ("anyOf", "oneOf", "allOf", "not", "if", "$ref", "$dynamicRef", "patternProperties")
_SCALARS = ("string", "number", "integer", "boolean")


class FieldKind(StrEnum):
    """How one field is edited."""

    STRING = "string"
    NUMBER = "number"
    INTEGER = "integer"
    BOOLEAN = "boolean"
    ENUM = "enum"
    LIST = "list"
    OBJECT = "object"
    OBJECT_LIST = "object-list"
    JSON = "json"


@dataclass(frozen=True, kw_only=True, slots=True)
class FieldSpec:
    """One field of the form: its property name, schema, editor kind, and whether it is required."""

    name: str
    schema: Mapping[str, Any]
    kind: FieldKind
    required: bool
    children: tuple[FieldSpec, ...] = ()


@dataclass(frozen=True, slots=True)
class FormResult:
    """What the form holds: the arguments when they pass every check, else the reasons they do not."""

    arguments: dict[str, Any] | None
    errors: tuple[str, ...]

    @property
    def valid(self) -> bool:
        """Whether the arguments passed the schema and the tool's own validation."""
        return self.arguments is not None and not self.errors


class _Missing:
    """No value: an optional field left empty is left out of the arguments."""


MISSING = _Missing()


# --- planning ------------------------------------------------------------------------------------------


def _scalar_kind(schema: Mapping[str, Any]) -> FieldKind | None:
    kind = schema.get("type")
    return FieldKind(kind) if isinstance(kind, str) and kind in _SCALARS else None


def _enum_values(schema: Mapping[str, Any]) -> list[Any] | None:
    values = schema.get("enum", [schema["const"]] if "const" in schema else None)
    if not isinstance(values, list) or not 0 < len(values) <= MAX_ENUM_OPTIONS:
        return None
    if any(isinstance(value, dict | list) for value in values):
        return None
    return values


def field_kind(schema: object) -> FieldKind:
    """The editor kind for one property schema; anything a form cannot show faithfully is JSON."""
    if not isinstance(schema, Mapping) or any(key in schema for key in _COMBINATORS):
        return FieldKind.JSON
    if "enum" in schema or "const" in schema:
        return FieldKind.ENUM if _enum_values(schema) is not None else FieldKind.JSON
    scalar = _scalar_kind(schema)
    if scalar is not None:
        return scalar
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        if field_kind(items) is FieldKind.OBJECT:
            return FieldKind.OBJECT_LIST
        if isinstance(items, Mapping) and not any(key in items for key in ("enum", "const", *_COMBINATORS)):
            return FieldKind.LIST if _scalar_kind(items) is not None else FieldKind.JSON
        return FieldKind.JSON
    if kind == "object" and isinstance(schema.get("properties"), Mapping) and schema["properties"]:
        return FieldKind.OBJECT
    return FieldKind.JSON


def json_only_reason(schema: Mapping[str, Any], value: Mapping[str, Any] | None = None) -> str | None:
    """Why ``schema`` or ``value`` is too deep for the form (the note shown above the JSON editor)."""
    if nesting_depth(schema, 2 * MAX_DEPTH + 1) > 2 * MAX_DEPTH + 1:
        reason = f"The input schema nests more than {MAX_DEPTH} levels deep, more than the form shows"
        if nesting_depth(schema, MAX_VALIDATED_DEPTH) > MAX_VALIDATED_DEPTH:
            reason += "; it is too deep to check here, so only the tool checks the arguments"
        return reason + ": edit the arguments as JSON."
    if value is not None and nesting_depth(value, MAX_DEPTH) > MAX_DEPTH:
        return (
            f"The arguments nest more than {MAX_DEPTH} levels deep, more than the form shows: edit as JSON."
        )
    return None


def plan_fields(
    schema: Mapping[str, Any], value: Mapping[str, Any] | None = None
) -> tuple[FieldSpec, ...] | None:
    """The fields of an object schema for ``value``, or ``None`` when only a JSON editor is faithful.

    JSON is chosen for a root that is not an object with properties (an object with no properties and
    no ``additionalProperties`` is an empty form), for more than :data:`MAX_FIELDS` fields (counting
    the fields of every item of ``value``'s lists of objects, and of at least one), for a
    ``value`` holding keys the schema does not name, so that nothing is dropped, and for a schema or
    value deeper than :data:`MAX_DEPTH` (see :func:`json_only_reason`).
    """
    if json_only_reason(schema, value) is not None:
        return None
    properties = schema.get("properties", {}) if schema.get("type", "object") == "object" else None
    if not isinstance(properties, Mapping) or any(key in schema for key in _COMBINATORS):
        return None
    if not properties and schema.get("additionalProperties", False) is not False:
        return None
    if value is not None and not set(value) <= set(properties):
        return None
    fields = _object_fields(schema, value or {}, depth=1)
    if fields is None or _size(fields, value or {}) > MAX_FIELDS:
        return None
    return fields


def _initial(name: str, schema: Mapping[str, Any], value: Mapping[str, Any]) -> object:
    """The value a field starts with: the arguments', else the schema's default, else ``MISSING``."""
    return value.get(name, schema.get("default", MISSING))


def _object_fields(
    schema: Mapping[str, Any], value: Mapping[str, Any], depth: int
) -> tuple[FieldSpec, ...] | None:
    properties: Mapping[str, Any] = schema.get("properties", {})
    required = schema.get("required", [])
    required_names = set(required) if isinstance(required, list) else set()
    fields: list[FieldSpec] = []
    for name, member in properties.items():
        if not isinstance(name, str):
            return None
        member_schema: Mapping[str, Any] = member if isinstance(member, Mapping) else {}
        initial = _initial(name, member_schema, value)
        kind = field_kind(member)
        children: tuple[FieldSpec, ...] | None = ()
        if kind is FieldKind.OBJECT:
            children = _nested_fields(member_schema, initial, depth)
        elif kind is FieldKind.OBJECT_LIST:
            children = _item_fields(member_schema["items"], initial, depth)
        if children is None or not _fits(kind, member_schema, initial):
            kind, children = FieldKind.JSON, ()
        fields.append(
            FieldSpec(
                name=name,
                schema=member_schema,
                kind=kind,
                required=name in required_names,
                children=children,
            )
        )
    return tuple(fields)


def _nested_fields(schema: Mapping[str, Any], initial: object, depth: int) -> tuple[FieldSpec, ...] | None:
    """The fields of a nested object, or ``None`` when it is too deep or ``initial`` does not fit them."""
    if depth >= MAX_NESTING:
        return None
    if initial is MISSING:
        return _object_fields(schema, {}, depth + 1)
    if not isinstance(initial, Mapping) or not set(initial) <= set(schema["properties"]):
        return None
    return _object_fields(schema, initial, depth + 1)


def _item_fields(schema: Mapping[str, Any], initial: object, depth: int) -> tuple[FieldSpec, ...] | None:
    """The fields of each item of a list of objects, or ``None`` when an item of ``initial`` needs others."""
    fields = _nested_fields(schema, MISSING, depth)
    if fields is None or initial is MISSING:
        return fields
    if not isinstance(initial, list) or any(
        _nested_fields(schema, item, depth) != fields for item in initial
    ):
        return None
    return fields


def _size(fields: Sequence[FieldSpec], value: Mapping[str, Any]) -> int:
    """How many fields the form shows for ``value``: nested ones included, a list's once per item."""
    total = 0
    for spec in fields:
        initial = _initial(spec.name, spec.schema, value)
        total += 1
        if spec.kind is FieldKind.OBJECT:
            total += _size(spec.children, initial if isinstance(initial, Mapping) else {})
        elif spec.kind is FieldKind.OBJECT_LIST:
            items = initial if isinstance(initial, list) and initial else [{}]
            total += sum(_size(spec.children, item) for item in items)
    return total


def _fits(kind: FieldKind, schema: object, initial: object) -> bool:
    """Whether ``initial`` can be shown by the editor of ``kind`` without changing or hiding it."""
    if initial is MISSING or kind in (FieldKind.JSON, FieldKind.OBJECT, FieldKind.OBJECT_LIST):
        return True
    if kind is FieldKind.STRING:
        return isinstance(initial, str) and _is_editable_text(initial)
    if kind is FieldKind.ENUM:
        assert isinstance(schema, Mapping)
        values = _enum_values(schema) or []
        return any(_same_json(initial, option) for option in values)
    if kind is FieldKind.LIST:
        assert isinstance(schema, Mapping)
        item_kind = _scalar_kind(schema["items"])
        return isinstance(initial, list) and all(
            _fits_scalar(item_kind, item) and item != "" for item in initial
        )
    return _fits_scalar(kind, initial)


def _fits_scalar(kind: FieldKind | None, value: object) -> bool:
    if kind is FieldKind.STRING:
        return isinstance(value, str) and is_plain_line(value)
    if kind is FieldKind.BOOLEAN:
        return isinstance(value, bool)
    if kind is FieldKind.INTEGER:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is FieldKind.NUMBER:
        return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return False


def _is_editable_text(text: str) -> bool:
    """Whether ``text`` can be edited as it is: its only hidden characters are newlines and tabs."""
    return is_plain_line(text.replace("\n", "").replace("\t", ""))


def _same_json(left: object, right: object) -> bool:
    """Equality as JSON sees it: ``True`` is not ``1``."""
    return type(left) is type(right) and left == right


def uses_text_area(name: str, schema: Mapping[str, Any], value: object) -> bool:
    """Whether the string property ``name`` holding ``value`` is edited in a multi-line text area.

    The rule is the module's: the value first, then the schema's hints, then the property's name.
    """
    if isinstance(value, str) and ("\n" in value or "\t" in value or len(value) > LONG_TEXT):
        return True
    max_length = schema.get("maxLength")
    if not isinstance(max_length, int) or isinstance(max_length, bool):
        max_length = None
    if "format" in schema or (max_length is not None and max_length <= LONG_MAX_LENGTH):
        return False
    return max_length is not None or "contentMediaType" in schema or _last_word(name) in TEXT_WORDS


def _last_word(name: str) -> str:
    """The last word of a property name in snake, kebab or camel case, lower-cased."""
    words = re.split(r"[^0-9A-Za-z]+|(?<=[0-9a-z])(?=[A-Z])", name)
    return next((word.lower() for word in reversed(words) if word), "")


# --- widgets -------------------------------------------------------------------------------------------


class _Field(Vertical):
    """One labelled field with its editor; the base edits any value as JSON, subclasses do better.

    ``given`` says whether ``initial`` came from the arguments rather than from the schema's default.
    """

    DEFAULT_CSS = """
    _Field { height: auto; margin: 0 0 1 0; }
    _Field > .field-label { width: 1fr; }
    _Field > .field-description { color: $text-muted; width: 1fr; }
    """

    hint: ClassVar[str] = ""

    def __init__(self, spec: FieldSpec, initial: object, path: str, *, given: bool = False) -> None:
        super().__init__(classes=f"field field-{spec.kind}")
        self.spec = spec
        self.initial = initial
        self.path = path
        self.given = given

    def compose(self) -> ComposeResult:
        yield Label(self.label(), classes="field-label")
        description = self.spec.schema.get("description")
        if isinstance(description, str) and description:
            yield Static(_description(description), classes="field-description")
        yield from self.editor()

    def label(self) -> Text:
        """The property's name, its title when it has one, a mark when required, and its kind."""
        label = render_untrusted(self.spec.name, newlines="visible", style="bold")
        title = self.spec.schema.get("title")
        if isinstance(title, str) and title and title != self.spec.name:
            label.append("  ")
            label.append_text(render_untrusted(title, newlines="visible"))
        if self.spec.required:
            label.append(" *", style="bold")
        label.append(f"  {self.kind_hint()}", style="dim")
        return label

    def kind_hint(self) -> str:
        """What the editor takes, shown dimmed after the label."""
        return self.hint or self.spec.kind.value

    def editor(self) -> ComposeResult:
        """The editing widgets: any value can be written as JSON; kinds with a better editor override this
        together with :meth:`read` and :meth:`blank`."""
        text = "" if self.initial is MISSING else editable_json(self.initial)
        yield TextArea(text, classes="field-input field-json", soft_wrap=True)

    def read(self, errors: list[str]) -> object:
        """The value, ``MISSING`` when left empty and optional; problems go to ``errors``."""
        text = self.query_one(TextArea).text
        if text.strip() == "":
            return self._empty(None)
        return _load_json(text, f"{self.path}: ", errors)

    def blank(self) -> bool:
        """Whether nothing was entered."""
        return self.query_one(TextArea).text.strip() == ""

    def keeps_empty(self, empty: object) -> bool:
        """Whether ``empty`` is sent for a field left empty: it is required, or the arguments held it."""
        return self.spec.required or (self.given and _same_json(self.initial, empty))

    def _empty(self, empty: object) -> object:
        return empty if self.keeps_empty(empty) else MISSING


def _description(description: str) -> Text:
    """A schema's description as plain text, cut at :data:`MAX_DESCRIPTION` characters."""
    text = render_untrusted(description[:MAX_DESCRIPTION])
    if len(description) > MAX_DESCRIPTION:
        text.append(f" … ({len(description) - MAX_DESCRIPTION} more characters)", style="italic")
    return text


class _LineInput(Input):
    """A one-line input that hands a paste with a newline or a tab to its field instead of cutting it."""

    class Pasted(Message):
        """Text that one line cannot hold was pasted."""

        def __init__(self, value: str) -> None:
            super().__init__()
            self.value = value

    def _on_paste(self, event: events.Paste) -> None:
        if "\n" in event.text or "\r" in event.text or "\t" in event.text:
            event.prevent_default()
            event.stop()
            start, end = sorted(self.selection)
            pasted = event.text.replace("\r\n", "\n").replace("\r", "\n")
            self.post_message(self.Pasted(self.value[:start] + pasted + self.value[end:]))


class _StringField(_Field):
    """A string edited as text: a one-line input, or a multi-line text area (see :func:`uses_text_area`)."""

    def __init__(self, spec: FieldSpec, initial: object, path: str, *, given: bool = False) -> None:
        super().__init__(spec, initial, path, given=given)
        self.multiline = uses_text_area(spec.name, spec.schema, initial)

    def kind_hint(self) -> str:
        return "multi-line string" if self.multiline else "string"

    def editor(self) -> ComposeResult:
        text = self.initial if isinstance(self.initial, str) else ""
        yield self._text_area(text) if self.multiline else _LineInput(text, classes="field-input")

    def _text_area(self, text: str) -> TextArea:
        return TextArea(text, classes="field-input field-text", soft_wrap=True)

    def text(self) -> str:
        """What is typed."""
        return self.query_one(TextArea).text if self.multiline else self.query_one(Input).value

    def blank(self) -> bool:
        return self.text() == ""

    def read(self, errors: list[str]) -> object:
        text = self.text()
        return self._empty("") if text == "" else text

    @on(_LineInput.Pasted)
    async def _grow(self, event: _LineInput.Pasted) -> None:
        """Turn the one-line input into a text area holding the pasted lines."""
        event.stop()
        line = self.query_one(_LineInput)
        area = self._text_area(event.value)
        await self.mount(area, after=line)
        await line.remove()
        self.multiline = True
        self.query_one(".field-label", Label).update(self.label())
        area.focus()
        area.move_cursor(area.document.end)


class _NumberField(_Field):
    """A number or an integer on one line."""

    def editor(self) -> ComposeResult:
        initial = "" if self.initial is MISSING else str(self.initial)
        yield Input(initial, type=_input_type(self.spec.kind), classes="field-input")

    def blank(self) -> bool:
        return self.query_one(Input).value == ""

    def read(self, errors: list[str]) -> object:
        text = self.query_one(Input).value
        if text.strip() == "":
            return MISSING
        try:
            return int(text)
        except ValueError:
            pass
        if self.spec.kind is FieldKind.NUMBER:
            try:
                number = float(text)
            except ValueError:
                number = math.nan
            if math.isfinite(number):
                return number
        errors.append(f"{self.path}: {text!r} is not a valid {self.spec.kind.value}")
        return MISSING


def _input_type(kind: FieldKind) -> Literal["integer", "number"]:
    return "integer" if kind is FieldKind.INTEGER else "number"


class _BooleanField(_Field):
    """A switch; an optional boolean is sent only once it has a value or the user touched it."""

    def __init__(self, spec: FieldSpec, initial: object, path: str, *, given: bool = False) -> None:
        super().__init__(spec, initial, path, given=given)
        self.touched = initial is not MISSING

    def editor(self) -> ComposeResult:
        yield Switch(value=self.initial is True, classes="field-input")

    @on(Switch.Changed)
    def _touch(self) -> None:
        self.touched = True

    def blank(self) -> bool:
        return not self.touched

    def read(self, errors: list[str]) -> object:
        value = self.query_one(Switch).value
        return value if self.spec.required or self.touched else MISSING


class _EnumField(_Field):
    """A choice among the schema's ``enum`` (or ``const``) values."""

    def editor(self) -> ComposeResult:
        self.values = _enum_values(self.spec.schema) or []
        options = [(_option_label(value), index) for index, value in enumerate(self.values)]
        chosen = next(
            (index for index, value in enumerate(self.values) if _same_json(value, self.initial)), Select.NULL
        )
        yield Select(options, value=chosen, allow_blank=True, classes="field-input")

    def blank(self) -> bool:
        return not isinstance(self.query_one(Select).value, int)

    def read(self, errors: list[str]) -> object:
        chosen = self.query_one(Select).value
        return self.values[chosen] if isinstance(chosen, int) else MISSING


def _option_label(value: object) -> Text:
    return render_untrusted(value) if isinstance(value, str) else Text(json.dumps(value))


class _ListField(_Field):
    """A list of scalars, one item per line; blank lines are ignored."""

    hint = "one item per line"

    def editor(self) -> ComposeResult:
        items = [] if self.initial is MISSING else self.initial
        assert isinstance(items, list)
        text = "\n".join(json.dumps(item) if not isinstance(item, str) else item for item in items)
        yield TextArea(text, classes="field-input field-list", soft_wrap=True)

    def blank(self) -> bool:
        return self.query_one(TextArea).text.strip() == ""

    def read(self, errors: list[str]) -> object:
        item_kind = _scalar_kind(self.spec.schema["items"])
        lines = [line for line in self.query_one(TextArea).text.split("\n") if line.strip() != ""]
        if not lines:
            return self._empty([])
        values: list[object] = []
        for number, line in enumerate(lines, start=1):
            value = line if item_kind is FieldKind.STRING else _parse_scalar(line.strip())
            if item_kind is not FieldKind.STRING and not _fits_scalar(item_kind, value):
                errors.append(f"{self.path}: line {number} {line!r} is not a valid {item_kind}")
            values.append(value)
        return values


def _parse_scalar(text: str) -> object:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def _load_json(text: str, where: str, errors: list[str]) -> object:
    """Parse JSON typed by the user; a problem goes to ``errors`` and gives ``MISSING``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        errors.append(f"{where}not valid JSON ({exc.msg}, line {exc.lineno})")
    except RecursionError:
        errors.append(f"{where}the JSON is nested too deeply")
    return MISSING


class _JsonField(_Field):
    """Any value, written as JSON (the base field's own editor)."""

    hint = "JSON"


class _ObjectField(_Field):
    """A nested object: its own fields in a bordered group."""

    hint = "object"

    def editor(self) -> ComposeResult:
        nested = self.initial if isinstance(self.initial, Mapping) else {}
        with Vertical(classes="field-group"):
            yield from _field_widgets(self.spec.children, nested, self.path)

    def _children(self) -> list[_Field]:
        group = self.query_one(".field-group", Vertical)
        return [child for child in group.children if isinstance(child, _Field)]

    def blank(self) -> bool:
        return all(child.blank() for child in self._children())

    def read(self, errors: list[str]) -> object:
        if self.blank() and not self.keeps_empty({}):
            return MISSING
        return _read_fields(self.query_one(".field-group", Vertical), errors)


class _Item(Vertical):
    """One item of a list of objects: a header with its number and a remove button, then its fields."""

    def __init__(self, fields: Sequence[FieldSpec], value: Mapping[str, Any], owner: str, index: int) -> None:
        super().__init__(classes="field-group field-item")
        self.fields = fields
        self.value = value
        self.owner = owner
        self.index = index

    @property
    def path(self) -> str:
        """Where the item is in the arguments, the prefix of its fields' paths (``files[0]``)."""
        return f"{self.owner}[{self.index}]"

    def compose(self) -> ComposeResult:
        with Horizontal(classes="item-header"):
            yield Label(self._heading(), classes="item-heading")
            yield Button("Remove item", classes="remove-item", compact=True)
        yield from _field_widgets(self.fields, self.value, self.path)

    def _heading(self) -> Text:
        return Text(f"item {self.index + 1}", style="dim")

    def renumber(self, index: int) -> None:
        """Move the item to ``index`` after an item before it was removed."""
        old = self.path
        self.index = index
        for field in self.query(_Field):
            field.path = self.path + field.path[len(old) :]
        self.query_one(".item-heading", Label).update(self._heading())

    def focus_first(self) -> None:
        """Focus the item's first editor (its remove button when it has no fields)."""
        focusable = [widget for widget in self.query("*") if widget.focusable]
        (focusable[1] if len(focusable) > 1 else focusable[0]).focus()


class _ObjectListField(_Field):
    """A list of objects: one bordered group per item, buttons to add an item (built from the item
    schema's defaults) and to remove one."""

    hint = "list of objects"

    def editor(self) -> ComposeResult:
        items = self.initial if isinstance(self.initial, list) else []
        with Vertical(classes="field-items"):
            for index, item in enumerate(items):
                yield _Item(self.spec.children, item, self.path, index)
        yield Button("Add item", classes="add-item", compact=True)

    def _items(self) -> list[_Item]:
        return list(self.query_one(".field-items", Vertical).query_children(_Item))

    def blank(self) -> bool:
        return not self._items()

    def read(self, errors: list[str]) -> object:
        items = self._items()
        if not items:
            return self._empty([])
        return [_read_fields(item, errors) for item in items]

    @on(Button.Pressed, ".add-item")
    async def _add(self, event: Button.Pressed) -> None:
        event.stop()
        item = _Item(self.spec.children, {}, self.path, len(self._items()))
        await self.query_one(".field-items", Vertical).mount(item)
        item.focus_first()
        item.scroll_visible()

    @on(Button.Pressed, ".remove-item")
    async def _remove(self, event: Button.Pressed) -> None:
        event.stop()
        item = next(node for node in event.button.ancestors if isinstance(node, _Item))
        await item.remove()
        items = self._items()
        for index, rest in enumerate(items):
            rest.renumber(index)
        following = [rest for rest in items if rest.index >= item.index]
        target = following[0].query_one(".remove-item") if following else self.query_one(".add-item")
        target.focus()


_EDITORS: dict[FieldKind, type[_Field]] = {
    FieldKind.STRING: _StringField,
    FieldKind.NUMBER: _NumberField,
    FieldKind.INTEGER: _NumberField,
    FieldKind.BOOLEAN: _BooleanField,
    FieldKind.ENUM: _EnumField,
    FieldKind.LIST: _ListField,
    FieldKind.OBJECT: _ObjectField,
    FieldKind.OBJECT_LIST: _ObjectListField,
    FieldKind.JSON: _JsonField,
}


def _field_widgets(fields: Sequence[FieldSpec], value: Mapping[str, Any], prefix: str) -> Iterator[_Field]:
    for spec in fields:
        initial = _initial(spec.name, spec.schema, value)
        path = f"{prefix}.{spec.name}" if prefix else spec.name
        yield _EDITORS[spec.kind](spec, initial, path, given=spec.name in value)


def _read_fields(container: Widget, errors: list[str]) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for child in container.children:
        if isinstance(child, _Field):
            member = child.read(errors)
            if member is not MISSING:
                value[child.spec.name] = member
    return value


class SchemaForm(Guarded, Vertical, can_focus=False):
    """Arguments edited in a form generated from a JSON Schema, or as JSON.

    ``schema`` is the tool's input schema; ``value`` the initial arguments (schema defaults otherwise);
    ``validate`` the tool's own check. :meth:`result` validates with a compiled validator (built once,
    here) and then ``validate``; :meth:`submit` posts :class:`SchemaForm.Submitted` with valid arguments
    or shows the errors. ``ctrl+t`` switches between the form and the JSON editor; a schema the form cannot
    show faithfully opens in the JSON editor.
    """

    DEFAULT_CSS = """
    SchemaForm { height: auto; }
    SchemaForm .field-group { height: auto; border: round $primary-darken-1; padding: 0 1; }
    SchemaForm .field-list, SchemaForm .field-json, SchemaForm .field-text {
        height: auto; min-height: 3; max-height: 12;
    }
    SchemaForm .field-items { height: auto; }
    SchemaForm .field-item { margin: 0 0 1 0; }
    SchemaForm .item-header { height: 1; }
    SchemaForm .item-heading { width: 1fr; }
    SchemaForm #schema-json { height: auto; min-height: 5; max-height: 24; }
    SchemaForm #schema-errors { color: $error; height: auto; }
    SchemaForm .schema-note { color: $text-muted; height: auto; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+t", "toggle_json", "Form/JSON"),
    ]

    class Submitted(Message):
        """Valid arguments, submitted by the user."""

        def __init__(self, form: SchemaForm, arguments: dict[str, Any]) -> None:
            super().__init__()
            self.form = form
            self.arguments = arguments

        @property
        def control(self) -> SchemaForm:
            """The form that was submitted."""
            return self.form

    def __init__(
        self,
        schema: Mapping[str, Any] | None,
        *,
        value: Mapping[str, Any] | None = None,
        validate: ArgumentsValidator | None = None,
        submit_on_enter: bool = True,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.schema: Mapping[str, Any] = schema if isinstance(schema, Mapping) else {}
        self.tool_validate = validate
        self.submit_on_enter = submit_on_enter
        self.validator, self.schema_problem = compile_validator(self.schema)
        self.depth_note = json_only_reason(self.schema, value)
        self._value: Mapping[str, Any] = dict(value) if value is not None else {}
        self._fields = plan_fields(self.schema, value) if self.validator is not None else None
        self.json_mode = self._fields is None

    def compose(self) -> ComposeResult:
        for note in (self.schema_problem, self.depth_note):
            if note is not None:
                yield Static(render_untrusted(note), classes="schema-note")
        if self.json_mode:
            yield TextArea(editable_json(self._value), id="schema-json", soft_wrap=True)
        elif not self._fields:
            yield Static("This tool takes no arguments.", classes="schema-note")
        else:
            yield from _field_widgets(self._fields, self._value, "")
        yield Static(id="schema-errors")

    def focus_first(self) -> None:
        """Focus the first editor of the form."""
        for widget in self.query("*"):
            if widget.focusable:
                widget.focus()
                return

    def read(self, errors: list[str]) -> dict[str, Any] | None:
        """The arguments as typed, before validation (``None`` when they cannot be read)."""
        if self.json_mode:
            value = _load_json(self.query_one("#schema-json", TextArea).text or "{}", "", errors)
            if value is MISSING:
                return None
            if not isinstance(value, dict):
                errors.append("the arguments must be a JSON object")
                return None
            return value
        return _read_fields(self, errors)

    def result(self) -> FormResult:
        """Read and validate: the schema first, then the tool's own ``validate``."""
        errors: list[str] = []
        arguments = self.read(errors)
        if arguments is None or errors:
            return FormResult(None, tuple(errors))
        if self.validator is not None:
            errors.extend(schema_errors(self.validator, arguments))
        if not errors and self.tool_validate is not None:
            try:
                self.tool_validate(arguments)
            except Exception as exc:  # the tool's own check may raise anything: it refuses the arguments
                errors.append(f"refused: {sanitize_public_message(str(exc) or type(exc).__name__)}")
        return FormResult(None if errors else arguments, tuple(errors))

    def submit(self) -> FormResult:
        """Validate, show the errors, and post :class:`Submitted` when the arguments are valid."""
        outcome = self.result()
        self.show_errors(outcome.errors)
        if outcome.arguments is not None:
            self.post_message(self.Submitted(self, outcome.arguments))
        return outcome

    def show_errors(self, errors: Sequence[str]) -> None:
        """Show ``errors`` under the form (they may quote untrusted schema text, so they stay plain)."""
        text = Text("\n").join(render_untrusted(line, newlines="visible") for line in errors)
        self.query_one("#schema-errors", Static).update(text)

    @on(Input.Submitted)
    def _submit_from_input(self, event: Input.Submitted) -> None:
        event.stop()
        if self.submit_on_enter:
            self.submit()

    async def action_toggle_json(self) -> None:
        """Switch between the form and the JSON editor, keeping what was typed."""
        errors: list[str] = []
        current = self.read(errors)
        if current is None or errors:
            self.show_errors([*errors, "fix these before switching"])
            return
        if self.json_mode:
            fields = plan_fields(self.schema, current) if self.validator is not None else None
            if fields is None:
                self.show_errors(["these arguments can only be edited as JSON"])
                return
            self._fields = fields
        self._value = current
        self.json_mode = not self.json_mode
        await self.recompose()
