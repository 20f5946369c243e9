"""The schema form: planning fields from a schema, editing by keyboard and mouse, validation, JSON mode."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Input, Select, Switch, TextArea

from ditto_tui.tui.widgets.schema_form import (
    MAX_FIELDS,
    FieldKind,
    SchemaForm,
    compile_validator,
    plan_fields,
    schema_errors,
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
