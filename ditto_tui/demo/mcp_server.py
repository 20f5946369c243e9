"""The bundled demo MCP server: notes tools over a folder, on stdio, streamable HTTP or SSE (127.0.0.1).

    python -m ditto_tui.demo.mcp_server [--root DIR] --notes DIR [--catalogue N] [--http PORT | --sse PORT]

Read tools list, read, search and check notes (``search_notes`` returns structured content with an output
schema; ``check_note`` reports an ``isError`` result for a note without a title); ``write_note`` replaces a
note and is annotated destructive. Each note is also a resource (the template ``note://{name}``, with
completions of the note names) and ``notes://index`` lists them; the prompt ``summarise_note`` asks for
a summary of one note. ``--catalogue N`` adds N generated tools, and every tool list is served in pages
of 100 with opaque cursors.

The server is the example users copy, so it confines itself with the sandbox's own path rules: a note is
read and written relative to the notes folder without ever following a symbolic link out of it, and a
relative ``--notes`` is found inside ``--root`` (the workspace, say) the same way. Without ``--root`` a
relative ``--notes`` is relative to the working directory.
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    Completion,
    CompletionArgument,
    CompletionContext,
    ListToolsResult,
    PromptReference,
    ResourceTemplateReference,
    ToolAnnotations,
)
from pydantic import BaseModel, Field

from ditto_tui import __version__
from ditto_tui.demo.servers import SAMPLE_NOTES
from ditto_tui.errors import PathError, ValidationError
from ditto_tui.sandbox._files import read_bytes, write_bytes
from ditto_tui.sandbox.paths import resolve_workspace_path, split_workspace_path, validate_workspace_path

PAGE_SIZE = 100
MAX_NOTE_CHARS = 100_000
MAX_NOTE_BYTES = 4 * MAX_NOTE_CHARS
_NOTE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}(\.md)?")
_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


class Match(BaseModel):
    """One line of a note that contains the query."""

    note: str = Field(description="The note's name.")
    line: int = Field(description="The line number, from 1.")
    text: str = Field(description="The whole line.")


class SearchResult(BaseModel):
    """Every matching line, in note order."""

    query: str
    count: int
    matches: list[Match]


def _refused(name: str, exc: ValidationError) -> ToolError:
    """A tool error for a refused note path; the sandbox's messages never name a link's target."""
    if exc.code == "not_found":
        return ToolError(f"there is no note named {name!r}")
    if exc.code == "outside_workspace":
        return ToolError(f"note {name!r} links outside the notes folder: refused")
    return ToolError(f"note {name!r} is refused: {exc.message}")


class Notes:
    """A folder of Markdown notes; names are plain file names, and no link leads a read or write out of it."""

    def __init__(self, folder: Path) -> None:
        # The path rules compare link targets with the folder's canonical path.
        self.folder = Path(os.path.realpath(folder))

    def file(self, name: str) -> str:
        """The file name of note ``name`` (``.md`` optional); anything but a plain note name is refused."""
        if not _NOTE_NAME.fullmatch(name):
            raise ToolError(f"{name!r} is not a note name (letters, digits, '-' and '_', optional .md)")
        return name if name.endswith(".md") else f"{name}.md"

    def names(self) -> list[str]:
        """Every note that is a regular file of the folder (links are read only when named), sorted."""
        with os.scandir(self.folder) as entries:
            return sorted(
                entry.name
                for entry in entries
                if entry.name.endswith(".md") and entry.is_file(follow_symlinks=False)
            )

    def read(self, name: str) -> str:
        """A note's text; a missing note, or one that links outside the folder, is a tool error."""
        file = self.file(name)
        try:
            data = read_bytes(self.folder, file, MAX_NOTE_BYTES)
        except ValidationError as exc:
            raise _refused(file, exc) from None
        return data.decode("utf-8", errors="replace")

    def write(self, name: str, text: str) -> str:
        """Replace (or create) a note atomically; a note that is a link is refused, never written through."""
        file = self.file(name)
        try:
            write_bytes(self.folder, file, text.encode("utf-8"))
        except ValidationError as exc:
            raise _refused(file, exc) from None
        return file


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"offset:{offset}".encode()).decode()


def _offset(cursor: object) -> int:
    try:
        kind, _, value = base64.urlsafe_b64decode(str(cursor)).decode().partition(":")
        if kind == "offset" and value.isdigit():
            return int(value)
    except ValueError:
        pass
    raise MCPError(code=INVALID_PARAMS, message="Invalid cursor")


class PagedTools:
    """Serves ``tools/list`` in pages of ``PAGE_SIZE`` with opaque cursors (server middleware).

    It answers from the server's tool list directly, so a page costs its own 100 tools, not the whole list.
    """

    def __init__(self, server: MCPServer) -> None:
        self.server = server

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/list":
            return await call_next(ctx)
        cursor = (ctx.params or {}).get("cursor")
        start = 0 if cursor is None else _offset(cursor)
        tools = await self.server.list_tools()
        end = start + PAGE_SIZE
        return ListToolsResult(tools=tools[start:end], next_cursor=_cursor(end) if end < len(tools) else None)


def _note_tools(server: MCPServer, notes: Notes) -> None:
    @server.tool(annotations=_READ_ONLY, structured_output=False)
    def list_notes() -> str:
        """List the notes in the notes folder, one name per line."""
        return "\n".join(notes.names())

    @server.tool(annotations=_READ_ONLY, structured_output=False)
    def read_note(name: str) -> str:
        """Read one note (for example 'welcome' or 'welcome.md')."""
        return notes.read(name)

    @server.tool(annotations=_READ_ONLY)
    def search_notes(query: str) -> SearchResult:
        """Find the lines of every note that contain the query (case-insensitive)."""
        needle = query.casefold()
        matches = [
            Match(note=name, line=number, text=line)
            for name in notes.names()
            for number, line in enumerate(notes.read(name).splitlines(), start=1)
            if needle in line.casefold()
        ]
        return SearchResult(query=query, count=len(matches), matches=matches)

    @server.tool(annotations=_READ_ONLY, structured_output=False)
    def check_note(name: str) -> str:
        """Check that a note starts with a '# ' title line; a note without one is reported as an error."""
        first = notes.read(name).lstrip().splitlines()[:1]
        if not first or not first[0].startswith("# "):
            raise ToolError(f"note {notes.file(name)!r} has no '# ' title line")
        return f"{notes.file(name)}: {first[0][2:].strip()}"

    destructive = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True)

    @server.tool(annotations=destructive, structured_output=False)
    def write_note(name: str, text: str) -> str:
        """Create a note, or replace its whole text."""
        if len(text) > MAX_NOTE_CHARS:
            raise ToolError(f"a note holds at most {MAX_NOTE_CHARS} characters")
        file = notes.write(name, text)
        return f"Wrote {len(text.encode('utf-8'))} bytes to {file}"


MAX_COMPLETIONS = 100
"""At most this many note names in one completion (the protocol's own limit)."""


def _note_resources(server: MCPServer, notes: Notes) -> None:
    """The notes as resources, a prompt over one note, and completions of the note names for both."""

    @server.resource("notes://index", name="index", title="Notes", mime_type="text/plain")
    def index() -> str:
        """The names of every note, one per line."""
        return "\n".join(notes.names())

    @server.resource("note://{name}", name="note", title="A note", mime_type="text/markdown")
    def note(name: str) -> str:
        """One note's Markdown text (its name, with or without .md)."""
        return notes.read(name)

    @server.prompt(title="Summarise a note")
    def summarise_note(name: str) -> str:
        """Ask for a short summary of one note, its text included."""
        return f"Summarise the note {notes.file(name)} in three sentences:\n\n{notes.read(name)}"

    async def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion | None:
        if argument.name != "name":
            return None
        typed = argument.value.casefold()
        found = [name.removesuffix(".md") for name in notes.names() if name.casefold().startswith(typed)]
        return Completion(
            values=found[:MAX_COMPLETIONS], total=len(found), has_more=len(found) > MAX_COMPLETIONS
        )

    server.completion()(complete)  # type: ignore[no-untyped-call]  # the SDK's decorator has no types


def _catalogue(count: int) -> list[Tool]:
    def entry(text: str = "") -> str:
        return f"catalogue entry: {text}"

    template = Tool.from_function(entry, name="catalogue", description="A generated catalogue entry.")
    return [
        template.model_copy(
            update={"name": f"catalogue_{n:04d}", "description": f"Generated catalogue entry number {n}."}
        )
        for n in range(1, count + 1)
    ]


def build_server(folder: Path, *, catalogue: int = 0) -> MCPServer:
    """The demo server over the notes in ``folder``, plus ``catalogue`` generated tools."""
    server = MCPServer(
        "ditto-demo",
        version=__version__,
        instructions="Notes tools: list, read, search and check notes; write_note replaces a note. "
        "Each note is the resource note://{name}; the prompt summarise_note asks for a summary of one.",
        tools=_catalogue(catalogue),
        log_level="WARNING",
    )
    server.middleware.append(PagedTools(server))
    notes = Notes(folder)
    _note_tools(server, notes)
    _note_resources(server, notes)
    return server


def prepare_notes(folder: Path) -> None:
    """Create ``folder`` with the sample notes when it does not exist yet (never writing through a link)."""
    if os.path.lexists(folder):
        return
    try:
        folder.mkdir(parents=True)
    except FileExistsError:  # made meanwhile by another server on the same folder, which fills it
        return
    real = Path(os.path.realpath(folder))
    for sample in sorted(SAMPLE_NOTES.glob("*.md")):
        write_bytes(real, sample.name, sample.read_bytes())


def notes_folder(notes: str, root: str | None = None) -> Path:
    """The notes folder: ``notes`` inside ``root`` when both are given and ``notes`` is relative.

    Inside ``root`` the folder is found with the sandbox's path rules and its missing parents are made
    one by one, so a symbolic link on the way may hop only within ``root``: a link out of it raises
    :class:`~ditto_tui.errors.PathError`. Otherwise ``notes`` is taken as written (relative to the
    working directory).
    """
    if root is None or os.path.isabs(notes):
        return Path(notes).absolute()
    base = Path(os.path.realpath(root))
    parts = split_workspace_path(validate_workspace_path(notes))
    done = "."
    for index, part in enumerate(parts):
        done = resolve_workspace_path(base, part if done == "." else f"{done}/{part}")
        if not os.path.lexists(base / done):
            # The rest is made by prepare_notes, below a parent that was checked to be real and inside.
            return (base / done).joinpath(*parts[index + 1 :])
        if not (base / done).is_dir():
            raise PathError(f"{done!r} is not a folder", code="not_a_directory")
    return base / done


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo server on stdio, or at 127.0.0.1 with ``--http PORT`` or ``--sse PORT``."""
    parser = argparse.ArgumentParser(description="The ditto-tui demo MCP server (notes tools).")
    parser.add_argument("--notes", required=True, help="the notes folder (created with sample notes)")
    parser.add_argument("--root", help="find a relative --notes inside DIR, never through a link out of it")
    parser.add_argument("--catalogue", type=int, default=0, help="add N generated tools")
    transport = parser.add_mutually_exclusive_group()
    transport.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1")
    transport.add_argument("--sse", type=int, metavar="PORT", help="serve SSE on 127.0.0.1")
    args = parser.parse_args(argv)
    try:
        folder = notes_folder(args.notes, args.root)
        prepare_notes(folder)
    except (PathError, OSError) as exc:
        parser.error(f"cannot use the notes folder {args.notes!r}: {exc}")
    server = build_server(folder, catalogue=args.catalogue)
    if args.http is not None:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    elif args.sse is not None:
        server.run("sse", host="127.0.0.1", port=args.sse)
    else:
        server.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
