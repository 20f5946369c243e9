"""The 14 read-only commands: structured arguments, their JSON schema, and one fixed command shape each."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ditto_tui.interaction.commands import _fields as f
from ditto_tui.interaction.commands._plan import CommandPlan

MAX_LINES = 1000
MAX_DEPTH = 32
MAX_NAME_BYTES = 255
MAX_BUFFERED_INPUT_BYTES = 64 * 1024 * 1024
"""``sort`` and ``uniq`` hold a whole file or line in memory: larger regular files are refused."""

_FIELDS = re.compile(
    r"[1-9][0-9]{0,5}(?:-(?:[1-9][0-9]{0,5})?)?(?:,[1-9][0-9]{0,5}(?:-(?:[1-9][0-9]{0,5})?)?)*"
)
_DELIMITERS = frozenset("\t" + "".join(chr(point) for point in range(0x20, 0x7F)))
_FIND_TYPES = {"file": "f", "directory": "d"}
_METRICS = {"lines": "-l", "words": "-w", "bytes": "-c"}

Parser = Callable[[Mapping[str, Any]], CommandPlan]


@dataclass(frozen=True, kw_only=True)
class CommandSpec:
    """One command tool: what callers see (name, description, schema) and how arguments become a plan."""

    name: str
    description: str
    properties: Mapping[str, Any]
    required: tuple[str, ...]
    parser: Parser

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments (a fresh copy); unknown fields are refused."""
        return {
            "type": "object",
            "additionalProperties": False,
            "properties": copy.deepcopy(dict(self.properties)),
            "required": list(self.required),
        }

    def plan(self, args: object) -> CommandPlan:
        """Check ``args`` strictly and return the command they describe; raises before anything runs."""
        return self.parser(f.exact_keys(args, self.properties))


def _path_field(description: str) -> dict[str, Any]:
    return {"type": "string", "description": f"{description} (a relative POSIX path inside the workspace)"}


def _flag_field(description: str) -> dict[str, Any]:
    return {"type": "boolean", "description": description}


def _int_field(description: str, low: int, high: int, default: int) -> dict[str, Any]:
    return {
        "type": "integer",
        "minimum": low,
        "maximum": high,
        "default": default,
        "description": description,
    }


def _grep(args: Mapping[str, Any]) -> CommandPlan:
    options = ["-n"]
    recursive = f.flag(args, "recursive")
    if recursive:
        options.append("-r")
    if f.flag(args, "ignoreCase"):
        options.append("-i")
    if f.flag(args, "fixedStrings"):
        options.append("-F")
    options += ["-D", "skip", "-e", f.text(args, "pattern"), "--"]
    return CommandPlan(
        program="grep",
        options=tuple(options),
        paths=f.paths(args, "paths"),
        reads_content=True,
        walks_directories=recursive,
    )


def _ls(args: Mapping[str, Any]) -> CommandPlan:
    options = ("-1", "-a", "--") if f.flag(args, "all") else ("-1", "--")
    return CommandPlan(program="ls", options=options, paths=(f.path(args, "path", default="."),))


def _cat(args: Mapping[str, Any]) -> CommandPlan:
    return CommandPlan(program="cat", options=("--",), paths=(f.path(args, "path"),), reads_content=True)


def _find_name(args: Mapping[str, Any]) -> tuple[str, ...]:
    if "name" not in args:
        return ()
    name = f.text(args, "name", max_chars=MAX_NAME_BYTES)
    if "/" in name or len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        raise f.refuse(f"name must be one file-name glob of at most {MAX_NAME_BYTES} bytes", "invalid_glob")
    return ("-name", name)


def _find(args: Mapping[str, Any]) -> CommandPlan:
    expression = ["-maxdepth", str(f.integer(args, "maxDepth", default=8, low=0, high=MAX_DEPTH))]
    if "type" in args:
        expression += ["-type", f.choice(args, "type", _FIND_TYPES, default="file")]
    expression += [*_find_name(args), "-print"]
    return CommandPlan(
        program="find",
        options=("-P",),
        paths=(f.path(args, "path", default="."),),
        expression=tuple(expression),
    )


def _lines_of(program: str) -> Parser:
    def parse(args: Mapping[str, Any]) -> CommandPlan:
        lines = f.integer(args, "lines", default=20, low=1, high=MAX_LINES)
        return CommandPlan(
            program=program,
            options=("-n", str(lines), "--"),
            paths=(f.path(args, "path"),),
            reads_content=True,
        )

    return parse


def _wc(args: Mapping[str, Any]) -> CommandPlan:
    metric = f.choice(args, "metric", _METRICS, default="lines")
    return CommandPlan(
        program="wc", options=(metric, "--"), paths=(f.path(args, "path"),), reads_content=True
    )


def _sort(args: Mapping[str, Any]) -> CommandPlan:
    chosen = [
        letter
        for key, letter in (("reverse", "-r"), ("numeric", "-n"), ("unique", "-u"))
        if f.flag(args, key)
    ]
    return CommandPlan(
        program="sort",
        options=(*chosen, "--"),
        paths=(f.path(args, "path"),),
        reads_content=True,
        max_input_bytes=MAX_BUFFERED_INPUT_BYTES,
    )


def _uniq(args: Mapping[str, Any]) -> CommandPlan:
    chosen = [letter for key, letter in (("count", "-c"), ("ignoreCase", "-i")) if f.flag(args, key)]
    return CommandPlan(
        program="uniq",
        options=(*chosen, "--"),
        paths=(f.path(args, "path"),),
        reads_content=True,
        max_input_bytes=MAX_BUFFERED_INPUT_BYTES,
    )


def _delimiter(args: Mapping[str, Any]) -> tuple[str, ...]:
    if "delimiter" not in args:
        return ()
    value = args["delimiter"]
    if not isinstance(value, str) or len(value) != 1 or value not in _DELIMITERS:
        raise f.refuse("delimiter must be one printable ASCII character or a tab", "invalid_delimiter")
    return ("-d", value)


def _cut(args: Mapping[str, Any]) -> CommandPlan:
    fields = f.text(args, "fields", max_chars=256)
    if not _FIELDS.fullmatch(fields):
        raise f.refuse("fields must be field numbers or ranges such as 1,3-5 or 2-", "invalid_fields")
    options = (*_delimiter(args), "-f", fields, "--")
    return CommandPlan(program="cut", options=options, paths=(f.path(args, "path"),), reads_content=True)


def _entry_of(program: str) -> Parser:
    def parse(args: Mapping[str, Any]) -> CommandPlan:
        return CommandPlan(program=program, options=("--",), paths=(f.path(args, "path"),))

    return parse


def _du(args: Mapping[str, Any]) -> CommandPlan:
    depth = f.integer(args, "maxDepth", default=1, low=0, high=MAX_DEPTH)
    options = ("-k", "-P", f"--max-depth={depth}", "--")
    return CommandPlan(program="du", options=options, paths=(f.path(args, "path"),))


def _pwd(args: Mapping[str, Any]) -> CommandPlan:
    return CommandPlan(program="pwd")


_PATH = _path_field("The file to read")
_LINES = _int_field("How many lines", 1, MAX_LINES, 20)

SPECS: tuple[CommandSpec, ...] = (
    CommandSpec(
        name="grep",
        description="Search workspace files for a pattern; prints matching lines with line numbers",
        properties={
            "pattern": {"type": "string", "minLength": 1, "maxLength": f.MAX_TEXT_CHARS},
            "paths": {
                "type": "array",
                "items": _path_field("A file or directory"),
                "minItems": 1,
                "maxItems": f.MAX_PATHS,
            },
            "recursive": _flag_field("Search directories recursively (symlinks are not followed)"),
            "ignoreCase": _flag_field("Match case-insensitively"),
            "fixedStrings": _flag_field("Treat the pattern as a literal string, not a regular expression"),
        },
        required=("pattern", "paths"),
        parser=_grep,
    ),
    CommandSpec(
        name="ls",
        description="List the entries of one workspace directory, one per line",
        properties={
            "path": _path_field("The directory, default the workspace root"),
            "all": _flag_field("Include entries whose names start with a dot"),
        },
        required=(),
        parser=_ls,
    ),
    CommandSpec(
        name="cat",
        description="Read one workspace text file",
        properties={"path": _PATH},
        required=("path",),
        parser=_cat,
    ),
    CommandSpec(
        name="find",
        description="Find workspace files or directories by name (symlinks are not followed)",
        properties={
            "path": _path_field("Where to start, default the workspace root"),
            "name": {"type": "string", "description": "A file-name glob such as *.py, matched literally"},
            "type": {"type": "string", "enum": list(_FIND_TYPES)},
            "maxDepth": _int_field("How many directory levels to descend", 0, MAX_DEPTH, 8),
        },
        required=(),
        parser=_find,
    ),
    CommandSpec(
        name="head",
        description="Read the first lines of one workspace text file",
        properties={"path": _PATH, "lines": _LINES},
        required=("path",),
        parser=_lines_of("head"),
    ),
    CommandSpec(
        name="tail",
        description="Read the last lines of one workspace text file",
        properties={"path": _PATH, "lines": _LINES},
        required=("path",),
        parser=_lines_of("tail"),
    ),
    CommandSpec(
        name="wc",
        description="Count the lines, words or bytes of one workspace file",
        properties={"path": _PATH, "metric": {"type": "string", "enum": list(_METRICS), "default": "lines"}},
        required=("path",),
        parser=_wc,
    ),
    CommandSpec(
        name="sort",
        description="Sort the lines of one workspace text file",
        properties={
            "path": _PATH,
            "reverse": _flag_field("Reverse the order"),
            "numeric": _flag_field("Compare by numeric value"),
            "unique": _flag_field("Keep only the first of equal lines"),
        },
        required=("path",),
        parser=_sort,
    ),
    CommandSpec(
        name="uniq",
        description="Drop adjacent duplicate lines of one workspace text file",
        properties={
            "path": _PATH,
            "count": _flag_field("Prefix each line with its number of occurrences"),
            "ignoreCase": _flag_field("Compare case-insensitively"),
        },
        required=("path",),
        parser=_uniq,
    ),
    CommandSpec(
        name="cut",
        description="Select delimited fields from each line of one workspace text file",
        properties={
            "path": _PATH,
            "fields": {
                "type": "string",
                "pattern": "^[0-9,-]+$",
                "description": "Fields such as 1,3-5 or 2-",
            },
            "delimiter": {"type": "string", "minLength": 1, "maxLength": 1, "description": "Default a tab"},
        },
        required=("path", "fields"),
        parser=_cut,
    ),
    CommandSpec(
        name="stat",
        description="Show the metadata of one workspace path",
        properties={"path": _path_field("The file or directory")},
        required=("path",),
        parser=_entry_of("stat"),
    ),
    CommandSpec(
        name="file",
        description="Identify the type of one workspace file",
        properties={"path": _path_field("The file or directory")},
        required=("path",),
        parser=_entry_of("file"),
    ),
    CommandSpec(
        name="du",
        description="Summarise disk usage in KiB below one workspace path (symlinks not followed)",
        properties={
            "path": _path_field("The file or directory"),
            "maxDepth": _int_field("How many directory levels to report", 0, MAX_DEPTH, 1),
        },
        required=("path",),
        parser=_du,
    ),
    CommandSpec(
        name="pwd",
        description="Show the workspace directory the commands run in",
        properties={},
        required=(),
        parser=_pwd,
    ),
)
