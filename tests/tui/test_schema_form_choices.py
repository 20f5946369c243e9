"""The schema form's choices (MCP elicitation's enums) and how it points at what is wrong on submit."""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console
from textual.app import App
from textual.containers import VerticalScroll
from textual.widgets import Input, Select, SelectionList

from ditto_tui.supervise.mcp_requests import ElicitationAnswer, ElicitationRequest
from ditto_tui.tui.screens.elicitation import ElicitationModal
from ditto_tui.tui.widgets.schema_form import FieldKind, SchemaForm, field_kind, plan_fields
from tests.tui.run_fixtures import wait_until
from tests.tui.test_schema_form import FormApp

EVERYTHING: dict[str, Any] = json.loads(
    (Path(__file__).parents[1] / "data" / "elicitation_everything.json").read_text(encoding="utf-8")
)
"""The requestedSchema of server-everything's ``trigger-elicitation-request`` (MCP 2025-11-25 shapes)."""

HEROES = {
    "type": "string",
    "title": "Hero",
    "oneOf": [
        {"const": "hero-1", "title": "Superman"},
        {"const": "hero-2", "title": "Green Lantern"},
        {"const": "hero-3", "title": "Wonder Woman"},
    ],
}
FISH = {
    "type": "array",
    "minItems": 1,
    "maxItems": 2,
    "items": {
        "anyOf": [
            {"const": "fish-1", "title": "Tuna"},
            {"const": "fish-2", "title": "Salmon"},
            {"const": "fish-3", "title": "Trout"},
        ]
    },
    "default": ["fish-1"],
}


class Host(App[None]):
    """An app that opens one elicitation and keeps its answer."""

    def __init__(self, view: ElicitationModal) -> None:
        super().__init__()
        self.view = view
        self.answers: list[ElicitationAnswer | None] = []

    def on_mount(self) -> None:
        self.push_screen(self.view, callback=self.answers.append)


def seen(app: App[Any]) -> str:
    """Everything on screen as plain text."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True, legacy_windows=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text(styles=False)


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def request(schema: Mapping[str, Any]) -> ElicitationRequest:
    return ElicitationRequest(
        request_id="mcp-elicitation-1",
        server="everything",
        mode="form",
        message="Please provide inputs for the following fields:",
        requested_schema=schema,
        url=None,
        host=None,
        url_allowed=False,
        elicitation_id=None,
        params={},
        requested_at=0.0,
    )


def test_every_enum_shape_of_the_spec_is_a_choice() -> None:
    fields = plan_fields(EVERYTHING)
    assert fields is not None
    kinds = {spec.name: spec.kind for spec in fields}
    assert kinds["untitledSingleSelectEnum"] is FieldKind.ENUM
    assert kinds["titledSingleSelectEnum"] is FieldKind.ENUM
    assert kinds["legacyTitledEnum"] is FieldKind.ENUM
    assert kinds["untitledMultipleSelectEnum"] is FieldKind.MULTI_ENUM
    assert kinds["titledMultipleSelectEnum"] is FieldKind.MULTI_ENUM
    assert FieldKind.JSON not in kinds.values()


def test_combinators_that_are_not_titled_constants_stay_json() -> None:
    assert field_kind({"oneOf": [{"type": "string"}, {"const": "a"}]}) is FieldKind.JSON
    assert field_kind({"anyOf": [{"const": {"a": 1}, "title": "object"}]}) is FieldKind.JSON
    assert field_kind({"oneOf": [{"const": "a", "title": 5}]}) is FieldKind.JSON
    assert field_kind({"oneOf": [{"const": "a"}], "anyOf": [{"const": "a"}]}) is FieldKind.JSON
    assert field_kind({"oneOf": [{"const": "a", "pattern": "b"}]}) is FieldKind.JSON
    assert field_kind({"enum": ["a"], "oneOf": [{"const": "a"}]}) is FieldKind.JSON
    assert field_kind({"type": "array", "items": {"anyOf": [{"type": "string"}]}}) is FieldKind.JSON
    # a value the choice cannot show (a duplicate, an unknown option) is edited as JSON, not dropped
    for schema, value in ((FISH, ["fish-1", "fish-1"]), (FISH, ["fish-9"]), (HEROES, "hero-9")):
        fields = plan_fields(obj(pick=schema), {"pick": value})
        assert fields is not None and fields[0].kind is FieldKind.JSON


async def test_a_titled_single_select_shows_titles_and_sends_the_const() -> None:
    app = FormApp(obj(hero={**HEROES, "default": "hero-1"}))
    async with app.run_test(size=(80, 24)) as pilot:
        form = app.query_one(SchemaForm)
        await pilot.pause()
        assert "Superman" in seen(app) and "hero-1" not in seen(app)
        assert form.result().arguments == {"hero": "hero-1"}
        app.query_one(Select).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert "Green Lantern" in seen(app) and "Wonder Woman" in seen(app)
        await pilot.press("down", "enter")
        await pilot.pause()
        assert form.result().arguments == {"hero": "hero-2"}
        assert "Green Lantern" in seen(app)


async def test_legacy_enum_names_are_the_labels_and_the_enum_values_are_sent() -> None:
    app = FormApp(obj(pet=EVERYTHING["properties"]["legacyTitledEnum"]))
    async with app.run_test(size=(80, 24)) as pilot:
        form = app.query_one(SchemaForm)
        await pilot.pause()
        assert "Cats" in seen(app) and "pet-1" not in seen(app)
        await pilot.click(Select)
        await pilot.pause()
        await pilot.click("SelectOverlay", offset=(4, 3))
        await pilot.pause()
        assert form.result().arguments == {"pet": "pet-2"}
        assert "Dogs" in seen(app)


async def test_a_multi_select_shows_titles_starts_with_the_defaults_and_sends_the_consts() -> None:
    app = FormApp(obj(fish=FISH))
    async with app.run_test(size=(80, 24)) as pilot:
        form = app.query_one(SchemaForm)
        await pilot.pause()
        screen = seen(app)
        assert all(title in screen for title in ("Tuna", "Salmon", "Trout"))
        assert "fish-" not in screen and "choose 1 to 2" in screen
        assert form.result().arguments == {"fish": ["fish-1"]}
        choices = app.query_one(SelectionList)
        choices.focus()
        await pilot.press("down", "down", "space")
        assert form.result().arguments == {"fish": ["fish-1", "fish-3"]}
        await pilot.click(SelectionList, offset=(4, 1))
        await pilot.pause()
        assert form.result().arguments == {"fish": ["fish-3"]}
        await pilot.press("space")
        assert form.result().arguments == {"fish": ["fish-1", "fish-3"]}
        await pilot.press("down", "space")
        outcome = form.result()
        assert outcome.errors == ("fish: ['fish-1', 'fish-2', 'fish-3'] is too long",)


async def test_a_multi_select_keeps_the_order_it_was_given() -> None:
    schema = obj(tags={"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}})
    app = FormApp(schema, value={"tags": ["c", "a"]})
    async with app.run_test(size=(80, 24)) as pilot:
        form = app.query_one(SchemaForm)
        assert form.result().arguments == {"tags": ["c", "a"]}
        app.query_one(SelectionList).focus()
        await pilot.press("down", "space")
        assert form.result().arguments == {"tags": ["c", "a", "b"]}
        await pilot.press("up", "space", "space", "space")
        assert form.result().arguments == {"tags": ["c", "b"]}


async def test_an_emptied_multi_select_is_left_out_unless_required() -> None:
    schema = {**obj(fish=FISH, tags={"type": "array", "items": {"enum": ["a", "b"]}}), "required": ["fish"]}
    app = FormApp(schema)
    async with app.run_test(size=(80, 30)) as pilot:
        form = app.query_one(SchemaForm)
        assert form.result().arguments == {"fish": ["fish-1"]}
        app.query(SelectionList).first().focus()
        await pilot.press("space")
        outcome = form.submit()
        assert outcome.errors == ("fish: [] should be non-empty",)
        await pilot.pause()
        assert "should be non-empty" in seen(app)


async def test_hostile_titles_are_shown_as_plain_text_and_told_apart() -> None:
    schema = obj(
        pick={
            "oneOf": [
                {"const": "a", "title": "[bold]Same[/bold]\x1b[31m"},
                {"const": "b", "title": "[bold]Same[/bold]\x1b[31m"},
                {"const": "c", "title": "line\nbreak"},
            ]
        },
        many={"type": "array", "items": {"anyOf": [{"const": "x", "title": "[red]evil\u202e"}]}},
    )
    app = FormApp(schema)
    async with app.run_test(size=(100, 30)) as pilot:
        form = app.query_one(SchemaForm)
        await pilot.pause()
        assert "[red]evil" in seen(app) and "\u202e" not in seen(app)
        app.query_one(Select).focus()
        await pilot.press("enter")
        await pilot.pause()
        screen = seen(app)
        assert "\x1b" not in screen
        assert screen.count("[bold]Same[/bold]") == 2
        # the two options that share a title also show their values
        assert any("Same" in line and " a" in line for line in screen.splitlines())
        assert any("Same" in line and " b" in line for line in screen.splitlines())
        await pilot.press("down", "down", "enter")
        await pilot.pause()
        assert form.result().arguments == {"pick": "b"}


LONG_FORM = {
    "type": "object",
    "properties": {
        **{f"note{index}": {"type": "string", "description": "Filler."} for index in range(8)},
        "email": {"type": "string", "format": "email", "title": "Email"},
        "when": {"type": "string", "format": "date"},
        "hero": HEROES,
    },
    "required": ["hero"],
}


async def test_submitting_an_invalid_field_scrolls_to_it_focuses_it_and_says_why_there() -> None:
    app = FormApp(LONG_FORM, value={"email": "notanemail", "when": "31/01/2025", "hero": "hero-1"})
    async with app.run_test(size=(80, 20)) as pilot:
        form = app.query_one(SchemaForm)
        await pilot.pause()
        email = next(field for field in form.query(".field") if getattr(field, "path", "") == "email")
        assert not email.region.overlaps(app.query_one(VerticalScroll).region)
        outcome = form.submit()
        await pilot.pause()
        assert outcome.errors == (
            "email: not an email address",
            "when: not a date (YYYY-MM-DD, such as 2025-01-31)",
        )
        assert app.submitted == []
        assert app.focused is email.query_one(Input)
        assert email.has_class("-invalid")
        await wait_until(pilot, lambda: email.region.overlaps(app.query_one(VerticalScroll).region))
        screen = seen(app)
        assert "✗ not an email address" in screen
        assert "'email'" not in screen
        email.query_one(Input).value = "ada@example.com"
        when = app.query_one(SchemaForm).query(Input)[9]
        when.value = "2025-01-31"
        form.submit()
        await pilot.pause()
        assert not email.has_class("-invalid")
        assert "✗" not in seen(app)
    assert app.submitted == [{"email": "ada@example.com", "when": "2025-01-31", "hero": "hero-1"}]


async def test_a_required_choice_left_blank_is_marked_at_the_choice() -> None:
    app = FormApp(LONG_FORM)
    async with app.run_test(size=(80, 20)) as pilot:
        form = app.query_one(SchemaForm)
        outcome = form.submit()
        await pilot.pause()
        assert outcome.errors == ("(arguments): 'hero' is a required property",)
        assert app.focused is app.query_one(Select)
        await wait_until(pilot, lambda: "✗ required: give it a value" in seen(app))


async def test_a_nested_item_error_is_marked_at_its_field() -> None:
    schema = obj(
        edits={
            "type": "array",
            "items": {"type": "object", "properties": {"count": {"type": "integer", "minimum": 1}}},
        }
    )
    app = FormApp(schema, value={"edits": [{"count": 2}, {"count": 0}]})
    async with app.run_test(size=(80, 30)) as pilot:
        form = app.query_one(SchemaForm)
        outcome = form.submit()
        await pilot.pause()
        assert outcome.errors == ("edits.1.count: 0 is less than the minimum of 1",)
        marked = [getattr(field, "path", "") for field in form.query(".-invalid")]
        assert marked == ["edits[1].count"]
        assert app.focused is form.query(Input)[1]


def field_at(form: SchemaForm, path: str) -> Any:
    return next(field for field in form.query(".field") if getattr(field, "path", "") == path)


def _all_shown(app: Any, titles: list[str]) -> bool:
    screen = seen(app)
    return all(title in screen for title in titles)


async def test_the_elicitation_from_server_everything_shows_titles_and_sends_consts() -> None:
    view = ElicitationModal(request(EVERYTHING))
    app = Host(view)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_until(pilot, lambda: view.armed)
        form = view.query_one(SchemaForm)
        assert not form.json_mode
        shown = {
            "titledSingleSelectEnum": ["Superman"],
            "legacyTitledEnum": ["Cats"],
            "titledMultipleSelectEnum": ["Tuna", "Salmon", "Trout"],
            "untitledMultipleSelectEnum": ["Guitar", "Piano", "Bass"],
        }
        for name, titles in shown.items():
            field_at(form, name).scroll_visible(animate=False)
            # The scroll is drawn a frame or more later: wait for the titles rather than one pause.
            await wait_until(pilot, functools.partial(_all_shown, app, titles))
            screen = seen(app)
            assert "hero-1" not in screen and "pet-1" not in screen and "fish-1" not in screen
        await wait_until(pilot, lambda: app.focused is not None)
        form.focus_first()
        await pilot.press(*"Ada")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: bool(app.answers))
    answer = app.answers[0]
    assert answer is not None and answer.action == "accept" and answer.content is not None
    assert {key: answer.content[key] for key in shown} == {
        "titledSingleSelectEnum": "hero-1",
        "legacyTitledEnum": "pet-1",
        "titledMultipleSelectEnum": ["fish-1"],
        "untitledMultipleSelectEnum": ["Guitar"],
    }
    assert answer.content["name"] == "Ada"


async def test_an_elicitation_with_a_bad_email_is_not_sent_and_points_at_the_email() -> None:
    view = ElicitationModal(request(EVERYTHING))
    app = Host(view)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: view.armed)
        form = view.query_one(SchemaForm)
        field_at(form, "name").query_one(Input).value = "Ada"
        email = field_at(form, "email")
        email.query_one(Input).value = "notanemail"
        field_at(form, "untitledMultipleSelectEnum").scroll_visible(animate=False)
        # The scroll is laid out a frame or more later: wait for it rather than one pause.
        await wait_until(pilot, lambda: not email.region.overlaps(view.body.region))
        await pilot.press("ctrl+s")
        await pilot.pause()
        await pilot.pause()
        assert app.answers == []
        assert app.focused is email.query_one(Input)
        assert email.has_class("-invalid")
        await wait_until(pilot, lambda: email.region.overlaps(view.body.region))
        screen = seen(app)
        assert "✗ not an email address" in screen and "is not a 'email'" not in screen
        email.query_one(Input).value = "ada@example.com"
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: bool(app.answers))
    answer = app.answers[0]
    assert answer is not None and answer.content is not None
    assert answer.content["email"] == "ada@example.com"


async def test_a_date_time_and_a_uri_that_break_their_format_are_refused_in_plain_words() -> None:
    schema = obj(
        when={"type": "string", "format": "date-time", "title": "When"},
        site={"type": "string", "format": "uri", "title": "Site"},
    )
    app = FormApp(schema, value={"when": "tomorrow at nine", "site": "example.com"})
    async with app.run_test(size=(80, 20)) as pilot:
        form = app.query_one(SchemaForm)
        await pilot.pause()
        outcome = form.submit()
        await pilot.pause()
        assert outcome.errors == (
            "site: not a URI (a full address, such as https://example.com/)",
            "when: not a date and time (such as 2025-01-31T09:30:00Z)",
        )
        assert app.submitted == []
        field_at(form, "when").query_one(Input).value = "2025-01-31T09:30:00Z"
        field_at(form, "site").query_one(Input).value = "https://example.com/"
        assert form.submit().errors == ()
        await pilot.pause()
    assert app.submitted == [{"when": "2025-01-31T09:30:00Z", "site": "https://example.com/"}]
