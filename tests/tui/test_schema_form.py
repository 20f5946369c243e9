"""The schema form: planning fields from a schema, editing by keyboard and mouse, validation, JSON mode."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from textual import events
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Button, Input, Select, Switch, TextArea

from ditto_tui.tui.widgets.schema_form import (
    LONG_MAX_LENGTH,
    LONG_TEXT,
    MAX_DESCRIPTION,
    MAX_FIELDS,
    MAX_NESTING,
    MISSING,
    FieldKind,
    SchemaForm,
    compile_validator,
    plan_fields,
    schema_errors,
    uses_text_area,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Where to write.", "pattern": "^[a-z./]+$"},
        "count": {"type": "integer", "minimum": 1},
        "ratio": {"type": "number"},
        "force": {"type": "boolean"},
        "mode": {"enum": ["replace", "append"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "options": {
            "type": "object",
            "properties": {"depth": {"type": "integer"}, "label": {"type": "string"}},
            "required": ["label"],
        },
        "extra": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    },
    "required": ["path", "mode"],
}


class FormApp(App[None]):
    """One form in a scrolling container; records what it submits."""

    def __init__(self, schema: Mapping[str, Any] | None, **kwargs: Any) -> None:
        super().__init__()
        self.schema = schema
        self.kwargs = kwargs
        self.submitted: list[dict[str, Any]] = []

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield SchemaForm(self.schema, id="form", **self.kwargs)

    def on_schema_form_submitted(self, event: SchemaForm.Submitted) -> None:
        self.submitted.append(event.arguments)


def test_plan_fields_picks_an_editor_per_property() -> None:
    fields = plan_fields(SCHEMA)
    assert fields is not None
    kinds = {spec.name: spec.kind for spec in fields}
    assert kinds == {
        "path": FieldKind.STRING,
        "count": FieldKind.INTEGER,
        "ratio": FieldKind.NUMBER,
        "force": FieldKind.BOOLEAN,
        "mode": FieldKind.ENUM,
        "tags": FieldKind.LIST,
        "options": FieldKind.OBJECT,
        "extra": FieldKind.JSON,
    }
    options = next(spec for spec in fields if spec.name == "options")
    assert [(child.name, child.required) for child in options.children] == [("depth", False), ("label", True)]


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"type": "array"}, None),
        ({"type": "object", "additionalProperties": True}, None),
        ({"oneOf": [{"type": "object"}]}, None),
        (SCHEMA, {"path": "a", "unknown": 1}),
        (
            {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(MAX_FIELDS + 1)}},
            None,
        ),
    ],
    ids=["not-an-object", "free-form", "combinator", "unknown-key", "too-many-fields"],
)
def test_plan_fields_falls_back_to_json_rather_than_drop_anything(schema: Any, value: Any) -> None:
    assert plan_fields(schema, value) is None


def test_values_a_form_cannot_show_faithfully_get_a_json_field() -> None:
    fields = plan_fields(
        SCHEMA,
        {"path": "evil\u202etxt", "count": True, "mode": "other", "tags": ["a\nb"], "options": {"x": 1}},
    )
    assert fields is not None
    kinds = {spec.name: spec.kind for spec in fields}
    assert (
        kinds["path"]
        is kinds["count"]
        is kinds["mode"]
        is kinds["tags"]
        is kinds["options"]
        is FieldKind.JSON
    )


def test_deep_nesting_becomes_json() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(8):
        schema = {"type": "object", "properties": {"inner": schema}}
    fields = plan_fields(schema)
    assert fields is not None
    depth, spec = 1, fields[0]
    while spec.kind is FieldKind.OBJECT:
        depth, spec = depth + 1, spec.children[0]
    assert spec.kind is FieldKind.JSON and depth <= 4


def test_compile_validator_uses_the_declared_draft_and_reports_invalid_schemas() -> None:
    validator, problem = compile_validator(
        {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}
    )
    assert problem is None and type(validator).__name__ == "Draft7Validator"
    validator, problem = compile_validator({"type": 5})
    assert validator is None and problem is not None and "invalid" in problem


def test_unresolvable_references_are_reported_not_fetched() -> None:
    validator, _problem = compile_validator(
        {"type": "object", "properties": {"a": {"$ref": "https://example.invalid/schema.json"}}}
    )
    assert validator is not None
    errors = schema_errors(validator, {"a": 1})
    assert len(errors) == 1 and "cannot be resolved" in errors[0]


async def test_keyboard_fills_every_kind_of_field_and_enter_submits() -> None:
    app = FormApp(SCHEMA)
    async with app.run_test(size=(100, 80)) as pilot:
        form = app.query_one(SchemaForm)
        inputs = form.query(Input)
        inputs[0].focus()
        await pilot.press(*"notes/a.txt", "tab", *"3", "tab", *"0.5", "tab", "space")
        select = form.query(Select).first()
        select.focus()
        await pilot.press("enter", "down", "down", "enter")
        tags = form.query(TextArea).first()
        tags.focus()
        await pilot.press(*"red", "enter", "enter", *"blue")
        label = form.query(".field-group Input")[1]
        label.focus()
        await pilot.press(*"lbl", "enter")
        await pilot.pause()
    assert app.submitted == [
        {
            "path": "notes/a.txt",
            "count": 3,
            "ratio": 0.5,
            "force": True,
            "mode": "append",
            "tags": ["red", "blue"],
            "options": {"label": "lbl"},
        }
    ]


async def test_schema_errors_and_the_tools_own_validation_are_shown() -> None:
    def refuse(arguments: Mapping[str, Any]) -> None:
        if arguments.get("path") == "secret":
            raise ValueError("that path is off limits")

    app = FormApp(SCHEMA, value={"path": "Bad Path", "count": 0}, validate=refuse)
    async with app.run_test(size=(100, 80)) as pilot:
        form = app.query_one(SchemaForm)
        outcome = form.submit()
        assert not outcome.valid
        assert any(line.startswith("path:") and "does not match" in line for line in outcome.errors)
        assert any(line.startswith("count:") for line in outcome.errors)
        assert "(arguments): 'mode' is a required property" in outcome.errors
        form.query(Input).first().value = "secret"
        form.query(Input)[1].value = "2"
        form.query_one(Select).value = 0
        outcome = form.submit()
        assert outcome.errors == ("refused: that path is off limits",)
        await pilot.pause()
        assert "off limits" in str(form.query_one("#schema-errors").render())
    assert app.submitted == []


async def test_mouse_toggles_a_switch_and_picks_an_option() -> None:
    schema = {"type": "object", "properties": {"force": {"type": "boolean"}, "mode": {"enum": ["a", "b"]}}}
    app = FormApp(schema)
    async with app.run_test(size=(100, 40)) as pilot:
        form = app.query_one(SchemaForm)
        assert form.result().arguments == {}
        await pilot.click(Switch)
        await pilot.click(Select)
        await pilot.pause()
        await pilot.click("SelectOverlay", offset=(4, 3))
        await pilot.pause()
        assert form.result().arguments == {"force": True, "mode": "b"}


async def test_hidden_characters_in_initial_values_are_edited_as_escaped_json() -> None:
    value = {"path": "evil\u202etxt.exe", "mode": "append"}
    app = FormApp(SCHEMA, value=value)
    async with app.run_test(size=(100, 80)):
        form = app.query_one(SchemaForm)
        editor = form.query(TextArea).first()
        assert editor.text == '"evil\\u202etxt.exe"'
        assert form.read([]) == {"path": "evil\u202etxt.exe", "mode": "append"}
        assert form.result().errors == ("path: 'evil\\u202etxt.exe' does not match '^[a-z./]+$'",)


async def test_ctrl_t_switches_to_json_and_back_keeping_the_arguments() -> None:
    app = FormApp(SCHEMA, value={"path": "a/b", "mode": "replace", "count": 2})
    async with app.run_test(size=(100, 80)) as pilot:
        form = app.query_one(SchemaForm)
        form.query(Input).first().focus()
        await pilot.press("ctrl+t")
        await pilot.pause()
        editor = form.query_one("#schema-json", TextArea)
        assert json.loads(editor.text) == {"path": "a/b", "mode": "replace", "count": 2}
        editor.text = json.dumps({"path": "c", "mode": "append"})
        editor.focus()
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert not form.json_mode
        assert form.result().arguments == {"path": "c", "mode": "append"}


async def test_json_mode_for_a_schema_without_fields_and_for_an_invalid_schema() -> None:
    app = FormApp({"type": 5}, value={"a": [1, 2]})
    async with app.run_test(size=(100, 40)):
        form = app.query_one(SchemaForm)
        assert form.json_mode and form.schema_problem is not None
        editor = form.query_one("#schema-json", TextArea)
        assert json.loads(editor.text) == {"a": [1, 2]}
        editor.text = "[1]"
        assert form.result().errors == ("the arguments must be a JSON object",)
        editor.text = "{"
        assert "not valid JSON" in form.result().errors[0]


async def test_a_tool_without_arguments_is_an_empty_form() -> None:
    app = FormApp({"type": "object", "properties": {}})
    async with app.run_test(size=(100, 20)):
        form = app.query_one(SchemaForm)
        assert not form.json_mode
        assert form.result().arguments == {}


# --- strings as text, descriptions, lists of objects ------------------------------------------------------

TEXT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "title": "File path", "description": "Where [bold]to[/] write\x1b[31m."},
        "content": {"type": "string", "description": "The whole new file."},
        "note": {"type": "string"},
    },
    "required": ["path", "content"],
}

ITEMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "edits": {
            "type": "array",
            "description": "Replacements, applied in order.",
            "items": {
                "type": "object",
                "properties": {
                    "old": {"type": "string"},
                    "count": {"type": "integer", "default": 1},
                },
                "required": ["old"],
            },
        }
    },
    "required": ["edits"],
}

HARD_TEXT = 'line "one" \\ back\n\tindented\t"q"\n\n  trailing  \n'


@pytest.mark.parametrize(
    ("name", "schema", "value", "expected"),
    [
        ("path", {"type": "string"}, "short", False),
        ("path", {"type": "string"}, MISSING, False),
        ("path", {"type": "string"}, "a\nb", True),
        ("path", {"type": "string"}, "a\tb", True),
        ("path", {"type": "string"}, "x" * (LONG_TEXT + 1), True),
        ("path", {"type": "string"}, "x" * LONG_TEXT, False),
        ("content", {"type": "string"}, MISSING, True),
        ("file_text", {"type": "string"}, "", True),
        ("commitMessage", {"type": "string"}, "", True),
        ("context", {"type": "string"}, "", False),
        ("content", {"type": "string", "maxLength": LONG_MAX_LENGTH}, "", False),
        ("content", {"type": "string", "format": "uri"}, "", False),
        ("summary", {"type": "string", "maxLength": LONG_MAX_LENGTH + 1}, "", True),
        ("summary", {"type": "string", "contentMediaType": "text/markdown"}, "", True),
        ("url", {"type": "string", "format": "uri"}, "a\nb", True),
    ],
)
def test_the_rule_for_a_text_area(name: str, schema: dict[str, Any], value: object, expected: bool) -> None:
    assert uses_text_area(name, schema, value) is expected


def test_multi_line_strings_are_string_fields_and_other_hidden_characters_are_json() -> None:
    fields = plan_fields(TEXT_SCHEMA, {"path": "a\tb", "content": HARD_TEXT, "note": "cr\r\n"})
    assert fields is not None
    assert [spec.kind for spec in fields] == [FieldKind.STRING, FieldKind.STRING, FieldKind.JSON]


def test_a_list_of_objects_gets_item_fields_unless_an_item_does_not_fit_them() -> None:
    fields = plan_fields(ITEMS_SCHEMA, {"edits": [{"old": "a"}, {"old": "b", "count": 2}]})
    assert fields is not None and fields[0].kind is FieldKind.OBJECT_LIST
    assert [(child.name, child.kind) for child in fields[0].children] == [
        ("old", FieldKind.STRING),
        ("count", FieldKind.INTEGER),
    ]
    for misfit in ([{"old": "a", "other": 1}], [{"old": "a", "count": "two"}], ["a"], {"old": "a"}):
        fields = plan_fields(ITEMS_SCHEMA, {"edits": misfit})
        assert fields is not None and fields[0].kind is FieldKind.JSON, misfit


def test_every_item_counts_towards_the_field_limit() -> None:
    assert plan_fields(ITEMS_SCHEMA, {"edits": [{"old": "a"}] * (MAX_FIELDS // 3)}) is not None
    assert plan_fields(ITEMS_SCHEMA, {"edits": [{"old": "a"}] * (MAX_FIELDS // 2)}) is None


def test_recursive_or_deep_item_schemas_do_not_become_item_fields() -> None:
    recursive: dict[str, Any] = {
        "type": "object",
        "$defs": {
            "node": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            }
        },
        "properties": {"nodes": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
    }
    fields = plan_fields(recursive)
    assert fields is not None and fields[0].kind is FieldKind.JSON
    nested: dict[str, Any] = {"type": "string"}
    for _ in range(MAX_NESTING):
        nested = {"type": "array", "items": {"type": "object", "properties": {"inner": nested}}}
    fields = plan_fields({"type": "object", "properties": {"top": nested}})
    assert fields is not None
    depth, spec = 1, fields[0]
    while spec.kind is FieldKind.OBJECT_LIST:
        depth, spec = depth + 1, spec.children[0]
    assert spec.kind is FieldKind.JSON and depth <= MAX_NESTING


async def test_strings_round_trip_exactly_and_are_shown_as_text_not_json() -> None:
    value = {"path": 'a "quoted" \\ path', "content": HARD_TEXT}
    app = FormApp(TEXT_SCHEMA, value=value)
    async with app.run_test(size=(100, 40)):
        form = app.query_one(SchemaForm)
        assert form.query_one(Input).value == 'a "quoted" \\ path'
        assert form.query_one(TextArea).text == HARD_TEXT
        assert form.result().arguments == value


async def test_typing_lines_into_a_text_area_and_tab_to_the_next_field() -> None:
    app = FormApp(TEXT_SCHEMA, submit_on_enter=True)
    async with app.run_test(size=(100, 40)) as pilot:
        form = app.query_one(SchemaForm)
        path, note = form.query(Input)
        path.focus()
        await pilot.press(*'say "hi"', "tab", *"first", "enter", *"  second", "enter")
        await pilot.press("tab")
        assert app.focused is note
        await pilot.press(*"n", "enter")
        await pilot.pause()
    assert app.submitted == [{"path": 'say "hi"', "content": "first\n  second\n", "note": "n"}]


async def test_empty_strings_stay_and_optional_ones_left_empty_are_left_out() -> None:
    app = FormApp(TEXT_SCHEMA, value={"path": "", "content": "", "note": ""})
    async with app.run_test(size=(100, 40)):
        form = app.query_one(SchemaForm)
        assert form.result().arguments == {"path": "", "content": "", "note": ""}
    app = FormApp(TEXT_SCHEMA, value={"path": "p", "content": "c", "note": "n"})
    async with app.run_test(size=(100, 40)):
        form = app.query_one(SchemaForm)
        for editor in form.query(Input):
            editor.value = ""
        form.query_one(TextArea).text = ""
        assert form.result().arguments == {"path": "", "content": ""}
    app = FormApp(TEXT_SCHEMA)
    async with app.run_test(size=(100, 40)):
        assert app.query_one(SchemaForm).result().arguments == {"path": "", "content": ""}


async def test_pasting_lines_into_a_one_line_input_turns_it_into_a_text_area() -> None:
    app = FormApp(TEXT_SCHEMA, value={"path": "ab", "content": "c"})
    async with app.run_test(size=(100, 40)) as pilot:
        form = app.query_one(SchemaForm)
        line = form.query(Input).first()
        line.focus()
        line.cursor_position = 1
        line.post_message(events.Paste("1\r\n2\t3\n"))
        await pilot.pause()
        await pilot.pause()
        areas = form.query(TextArea)
        assert len(areas) == 2 and areas.first().has_focus
        assert areas.first().text == "a1\n2\t3\nb"
        assert "multi-line string" in str(form.query(".field-label").first().render())
        assert form.result().arguments == {"path": "a1\n2\t3\nb", "content": "c"}


async def test_title_and_description_are_shown_as_plain_text() -> None:
    app = FormApp(TEXT_SCHEMA)
    async with app.run_test(size=(100, 40)):
        form = app.query_one(SchemaForm)
        label = form.query(".field-label").first().render()
        description = form.query(".field-description").first().render()
        assert isinstance(label, Content) and isinstance(description, Content)
        assert label.plain.startswith("path  File path *")
        assert description.plain == "Where [bold]to[/] write⟨ESC⟩[31m."
        shown = [node.render() for node in form.query(".field-description")]
        assert any(isinstance(text, Content) and text.plain == "The whole new file." for text in shown)


async def test_a_huge_description_is_cut() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "description": "d" * 50_000}}}
    app = FormApp(schema)
    async with app.run_test(size=(100, 40)):
        shown = app.query_one(".field-description").render()
        assert isinstance(shown, Content)
        assert shown.plain.endswith(f"… ({50_000 - MAX_DESCRIPTION} more characters)")


async def test_items_are_added_and_removed_by_mouse_and_keyboard() -> None:
    """Items show the schema's defaults, as every field does; removing one renumbers the rest."""
    value = {"edits": [{"old": "a"}, {"old": "b", "count": 2}, {"old": "c", "count": 3}]}
    app = FormApp(ITEMS_SCHEMA, value=value)
    async with app.run_test(size=(100, 60)) as pilot:
        form = app.query_one(SchemaForm)
        assert form.result().arguments == {
            "edits": [{"old": "a", "count": 1}, {"old": "b", "count": 2}, {"old": "c", "count": 3}]
        }
        await pilot.click(form.query(".remove-item").first())
        await pilot.pause()
        assert form.result().arguments == {"edits": [{"old": "b", "count": 2}, {"old": "c", "count": 3}]}
        headings = [node.render() for node in form.query(".item-heading")]
        assert [str(heading) for heading in headings] == ["item 1", "item 2"]
        assert app.focused is form.query(".remove-item").first()
        count = form.query(".field-item").last().query(Input).last()
        count.value = "x"
        assert form.result().errors == ("edits[1].count: 'x' is not a valid integer",)
        count.value = "3"
        await pilot.press("enter")
        await pilot.pause()
        assert form.result().arguments == {"edits": [{"old": "c", "count": 3}]}
        add = form.query_one(".add-item", Button)
        add.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.focused, Input)
        await pilot.press(*"new", "tab", "backspace", "5")
        await pilot.click(add)
        await pilot.pause()
        assert form.result().arguments == {
            "edits": [{"old": "c", "count": 3}, {"old": "new", "count": 5}, {"old": "", "count": 1}]
        }


async def test_removing_every_item_of_a_required_list_sends_an_empty_list() -> None:
    app = FormApp(ITEMS_SCHEMA, value={"edits": [{"old": "a"}]})
    async with app.run_test(size=(100, 40)) as pilot:
        form = app.query_one(SchemaForm)
        await pilot.click(form.query_one(".remove-item"))
        await pilot.pause()
        assert app.focused is form.query_one(".add-item")
        assert form.result().arguments == {"edits": []}


def test_snapshot_of_text_fields_descriptions_and_items(snap_compare: Any) -> None:
    schema = {
        "type": "object",
        "properties": {**TEXT_SCHEMA["properties"], **ITEMS_SCHEMA["properties"]},
        "required": ["path", "content"],
    }
    value = {"path": "notes/a.md", "content": '# Title\n\n\tsome "text"\n', "edits": [{"old": "x"}]}
    assert snap_compare(FormApp(schema, value=value), terminal_size=(80, 40))
