"""A form generated from a JSON Schema, with a JSON editor for whatever a form cannot show faithfully.

Each property gets an editor for its kind (:func:`field_kind`): a switch, a choice, a list of checkable
options for a list of choices, a one-line input for a number, one line per item for a list of scalars, a
bordered group for a nested object, one group per item (with *Add item* and *Remove item* buttons) for a list
of objects, and JSON for anything else. A choice is an ``enum``, a ``const``, or a ``oneOf``/``anyOf`` of
titled constants (MCP elicitation's titled enums); an option shows its ``title`` (or legacy ``enumNames``
entry) and sends its value. Each label shows the property's name, its ``title`` and kind, and under it the
``description``, all as plain text with hidden characters made visible (they come from whoever wrote the
schema); so do option titles.

On submit every problem is listed under the form and also shown at its field, which is marked, focused and
scrolled into view (the first one); a broken ``format`` is worded plainly (:data:`FORMAT_WORDS`).

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
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Literal

import jsonschema
import referencing.exceptions
from jsonschema.protocols import Validator
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Button, Input, Label, Select, SelectionList, Static, Switch, TextArea
from textual.widgets.selection_list import Selection

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
    "FORMAT_WORDS",
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
_TITLED = ("oneOf", "anyOf")
_TITLED_KEYS = frozenset({"const", "title", "description", "type"})


class FieldKind(StrEnum):
    """How one field is edited."""

    STRING = "string"
    NUMBER = "number"
    INTEGER = "integer"
    BOOLEAN = "boolean"
    ENUM = "enum"
    MULTI_ENUM = "multi-enum"
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


@dataclass(frozen=True, slots=True)
class _Choice:
    """One option of a choice: the value sent, and the title shown instead of it (when there is one)."""

    value: object
    title: str | None


def _choices(schema: Mapping[str, Any]) -> tuple[_Choice, ...] | None:
    """The options of a choice, or ``None`` when ``schema`` is not a choice the form can show.

    A choice is an ``enum`` (titled by a legacy ``enumNames`` of the same length), a ``const``, or a
    ``oneOf`` or ``anyOf`` of titled constants (``{"const": "hero-1", "title": "Superman"}``, as MCP
    elicitation's titled enums are written).
    """
    combinators = [key for key in _COMBINATORS if key in schema]
    if "enum" in schema or "const" in schema:
        values = None if combinators else _enum_values(schema)
        if values is None:
            return None
        names = schema.get("enumNames")
        if not isinstance(names, list) or len(names) != len(values):
            names = [None] * len(values)
        return tuple(
            _Choice(value, name if isinstance(name, str) else None)
            for value, name in zip(values, names, strict=True)
        )
    if len(combinators) != 1 or combinators[0] not in _TITLED:
        return None
    members = schema[combinators[0]]
    if not isinstance(members, list) or not 0 < len(members) <= MAX_ENUM_OPTIONS:
        return None
    choices = [_titled_const(member) for member in members]
    return None if any(choice is None for choice in choices) else tuple(filter(None, choices))


def _titled_const(member: object) -> _Choice | None:
    """One titled constant of a ``oneOf`` or ``anyOf`` choice, or ``None`` when it is something else."""
    if not isinstance(member, Mapping) or "const" not in member or not set(member) <= _TITLED_KEYS:
        return None
    value, title = member["const"], member.get("title")
    if isinstance(value, dict | list) or not isinstance(title, str | None):
        return None
    return _Choice(value, title)


def _enum_values(schema: Mapping[str, Any]) -> list[Any] | None:
    values = schema.get("enum", [schema["const"]] if "const" in schema else None)
    if not isinstance(values, list) or not 0 < len(values) <= MAX_ENUM_OPTIONS:
        return None
    if any(isinstance(value, dict | list) for value in values):
        return None
    return values


def field_kind(schema: object) -> FieldKind:
    """The editor kind for one property schema; anything a form cannot show faithfully is JSON."""
    if not isinstance(schema, Mapping):
        return FieldKind.JSON
    if _choices(schema) is not None:
        return FieldKind.ENUM
    if any(key in schema for key in (*_COMBINATORS, "enum", "const")):
        return FieldKind.JSON
    scalar = _scalar_kind(schema)
    if scalar is not None:
        return scalar
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        if field_kind(items) is FieldKind.OBJECT:
            return FieldKind.OBJECT_LIST
        if isinstance(items, Mapping) and _choices(items) is not None:
            return FieldKind.MULTI_ENUM
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
        return _choice_index(_choices(schema) or (), initial) is not None
    if kind is FieldKind.MULTI_ENUM:
        assert isinstance(schema, Mapping)
        options = _choices(schema["items"]) or ()
        indexes = [_choice_index(options, item) for item in initial] if isinstance(initial, list) else [None]
        return None not in indexes and len(set(indexes)) == len(indexes)
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


def _choice_index(choices: Sequence[_Choice], value: object) -> int | None:
    """Where ``value`` is among ``choices``, or ``None`` when it is not one of them."""
    return next((index for index, choice in enumerate(choices) if _same_json(choice.value, value)), None)


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
    _Field > .field-error { color: $error; width: 1fr; display: none; }
    _Field.-invalid { border-left: thick $error; padding-left: 1; }
    _Field.-invalid > .field-error { display: block; }
    """

    hint: ClassVar[str] = ""

    def __init__(self, spec: FieldSpec, initial: object, path: str, *, given: bool = False) -> None:
        super().__init__(classes=f"field field-{spec.kind}")
        self.spec = spec
        self.initial = initial
        self.path = path
        self.given = given
        self.error_line = Static(classes="field-error")

    def compose(self) -> ComposeResult:
        yield Label(self.label(), classes="field-label")
        description = self.spec.schema.get("description")
        if isinstance(description, str) and description:
            yield Static(_description(description), classes="field-description")
        yield from self.editor()
        yield self.error_line

    def show_problems(self, messages: Sequence[str]) -> None:
        """Mark the field with what is wrong with it (nothing clears the mark); plain text, as the
        messages may quote the schema."""
        self.set_class(bool(messages), "-invalid")
        lines = (render_untrusted(f"✗ {message}", newlines="visible") for message in messages)
        self.error_line.update(Text("\n").join(lines))

    def focus_editor(self) -> None:
        """Focus the field's first editor."""
        focusable = next((widget for widget in self.query("*") if widget.focusable), None)
        if focusable is not None:
            focusable.focus(scroll_visible=False)

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
    """A choice among the schema's options (see :func:`_choices`), shown by their titles."""

    def editor(self) -> ComposeResult:
        self.choices = _choices(self.spec.schema) or ()
        options = list(zip(_choice_labels(self.choices), range(len(self.choices)), strict=True))
        chosen = _choice_index(self.choices, self.initial)
        yield Select(
            options, value=Select.NULL if chosen is None else chosen, allow_blank=True, classes="field-input"
        )

    def blank(self) -> bool:
        return not isinstance(self.query_one(Select).value, int)

    def read(self, errors: list[str]) -> object:
        chosen = self.query_one(Select).value
        return self.choices[chosen].value if isinstance(chosen, int) else MISSING


class _MultiEnumField(_Field):
    """A list of options picked from the item schema's choices, each shown by its title, toggled with
    space, enter or a click. The list keeps the order it came in; options picked later follow in order."""

    DEFAULT_CSS = """
    _MultiEnumField > SelectionList { height: auto; max-height: 12; }
    """

    def editor(self) -> ComposeResult:
        self.choices = _choices(self.spec.schema["items"]) or ()
        initial = self.initial if isinstance(self.initial, list) else []
        self.order = [index for item in initial if (index := _choice_index(self.choices, item)) is not None]
        yield SelectionList[int](
            *(
                Selection(label, index, index in self.order)
                for index, label in enumerate(_choice_labels(self.choices))
            ),
            classes="field-input field-choices",
        )

    def kind_hint(self) -> str:
        least, most = (self.spec.schema.get(key) for key in ("minItems", "maxItems"))
        least = least if isinstance(least, int) and not isinstance(least, bool) and least > 0 else None
        most = most if isinstance(most, int) and not isinstance(most, bool) else None
        if least is not None and most is not None:
            return f"choose {least} to {most}"
        if least is not None or most is not None:
            return f"choose at least {least}" if least is not None else f"choose at most {most}"
        return "choose any"

    def blank(self) -> bool:
        return not self.query_one(SelectionList).selected

    def read(self, errors: list[str]) -> object:
        selected = set(self.query_one(SelectionList).selected)
        if not selected:
            return self._empty([])
        picked = [index for index in self.order if index in selected]
        picked += sorted(selected.difference(picked))
        return [self.choices[index].value for index in picked]


def _choice_labels(choices: Sequence[_Choice]) -> list[Text]:
    """What each option shows: its title, else its value; a title that two options share also shows
    the value, so that they can be told apart."""
    titles = Counter(choice.title for choice in choices)
    labels = []
    for choice in choices:
        if not choice.title:
            labels.append(_option_label(choice.value))
            continue
        label = render_untrusted(choice.title, newlines="visible")
        if titles[choice.title] > 1:
            label.append("  ")
            label.append_text(_option_label(choice.value, style="dim"))
        labels.append(label)
    return labels


def _option_label(value: object, style: str = "") -> Text:
    if isinstance(value, str):
        return render_untrusted(value, newlines="visible", style=style)
    return Text(json.dumps(value), style=style)


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
    FieldKind.MULTI_ENUM: _MultiEnumField,
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


@dataclass(frozen=True, slots=True)
class _Problem:
    """One reason the arguments are refused: the line listed under the form, the paths of the fields it
    may belong to (the closest first), and what is shown at that field."""

    line: str
    at: tuple[str, ...] = ()
    message: str = ""


FORMAT_WORDS: dict[str, str] = {
    "email": "not an email address",
    "idn-email": "not an email address",
    "uri": "not a URI (a full address, such as https://example.com/)",
    "iri": "not a URI (a full address, such as https://example.com/)",
    "uri-reference": "not a URI reference",
    "date": "not a date (YYYY-MM-DD, such as 2025-01-31)",
    "date-time": "not a date and time (such as 2025-01-31T09:30:00Z)",
    "time": "not a time (such as 09:30:00Z)",
    "duration": "not a duration (such as P1DT2H)",
    "ipv4": "not an IPv4 address",
    "ipv6": "not an IPv6 address",
    "hostname": "not a host name",
    "idn-hostname": "not a host name",
    "uuid": "not a UUID",
    "regex": "not a regular expression",
}
"""How a value that breaks a string ``format`` is described, in place of the schema library's wording."""


def _schema_problems(validator: Validator, arguments: Mapping[str, Any]) -> list[_Problem]:
    """Every schema violation of ``arguments`` as :func:`schema_errors` words it, in the same order,
    except that a broken ``format`` is worded plainly (``email: not an email address``)."""
    try:
        found = sorted(validator.iter_errors(arguments), key=lambda error: list(map(str, error.path)))
    except (referencing.exceptions.Unresolvable, RecursionError):
        return [_Problem(line) for line in schema_errors(validator, arguments)]
    return [_problem(error) for error in found]


def _problem(error: jsonschema.ValidationError) -> _Problem:
    parts = list(error.absolute_path)
    where = ".".join(map(str, parts)) or "(arguments)"
    message = error.message
    if error.validator == "format":
        fmt = error.validator_value
        message = FORMAT_WORDS.get(fmt, f"not in the {fmt!r} format") if isinstance(fmt, str) else message
    shown = message
    missing = _missing_property(error)
    if missing is not None:
        parts.append(missing)
        shown = "required: give it a value"
    at = tuple(_form_path(parts[:count]) for count in range(len(parts), 0, -1))
    return _Problem(f"{where}: {message}", at, shown)


def _missing_property(error: jsonschema.ValidationError) -> str | None:
    """The property a ``required`` error is about (each missing one has its own error)."""
    names, instance = error.validator_value, error.instance
    if error.validator != "required" or not isinstance(names, list) or not isinstance(instance, Mapping):
        return None
    wanted = [name for name in names if isinstance(name, str) and name not in instance]
    return next((name for name in wanted if error.message == f"{name!r} is a required property"), None)


def _form_path(parts: Sequence[object]) -> str:
    """A field's path (``files[0].name``) from the keys and indexes leading to it."""
    path = ""
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else str(part)
    return path


def _owner(problem: _Problem, fields: Mapping[str, _Field]) -> tuple[_Field | None, str]:
    """The field ``problem`` belongs to, with what to show there; a read error names its field's path."""
    for path in problem.at:
        if path in fields:
            return fields[path], problem.message
    named = [path for path in fields if problem.line.startswith(f"{path}: ")]
    if not named:
        return None, problem.line
    path = max(named, key=len)
    return fields[path], problem.line[len(path) + 2 :]


def _outcome(arguments: dict[str, Any] | None, problems: Sequence[_Problem]) -> FormResult:
    return FormResult(None if problems else arguments, tuple(problem.line for problem in problems))


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
        return _outcome(*self._check())

    def _check(self) -> tuple[dict[str, Any] | None, list[_Problem]]:
        errors: list[str] = []
        arguments = self.read(errors)
        if arguments is None or errors:
            return None, [_Problem(line) for line in errors]
        problems = _schema_problems(self.validator, arguments) if self.validator is not None else []
        if not problems and self.tool_validate is not None:
            try:
                self.tool_validate(arguments)
            except Exception as exc:  # the tool's own check may raise anything: it refuses the arguments
                refusal = sanitize_public_message(str(exc) or type(exc).__name__)
                problems.append(_Problem(f"refused: {refusal}"))
        return arguments, problems

    def submit(self) -> FormResult:
        """Validate, show the errors (each also at its field, the first focused and scrolled to), and
        post :class:`Submitted` when the arguments are valid."""
        arguments, problems = self._check()
        outcome = _outcome(arguments, problems)
        self.show_errors(outcome.errors)
        self._mark(problems)
        if outcome.arguments is not None:
            self.post_message(self.Submitted(self, outcome.arguments))
        return outcome

    def _mark(self, problems: Sequence[_Problem]) -> None:
        """Show each problem at its field and bring the first such field into view, focused (or the list
        under the form, when no field owns a problem)."""
        fields = {field.path: field for field in self.query(_Field)}
        marked: dict[str, list[str]] = {}
        for problem in problems:
            field, message = _owner(problem, fields)
            if field is not None:
                marked.setdefault(field.path, []).append(message)
        for path, field in fields.items():
            field.show_problems(marked.get(path, []))
        first = next((field for field in fields.values() if field.path in marked), None)
        if first is not None:
            first.focus_editor()
        if problems:
            target = first or self.query_one("#schema-errors", Static)
            self.call_after_refresh(target.scroll_visible, animate=False)

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
