"""The argv oracle of ADVERSARIAL §2.3: fixed command shapes, strict inputs, user values never options."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ditto_tui.errors import PathError, ToolValidationError, ValidationError
from ditto_tui.interaction import create_read_only_command_tools
from ditto_tui.interaction.commands import COMMAND_TOOL_NAMES, build_argv
from ditto_tui.sandbox import validate_workspace_path
from tests.interaction.commands.command_harness import ALL_TOOLS, OPTION_LIKE, UNKNOWN_FIELDS
from tests.properties import examples


def test_seed_command_shapes() -> None:
    shapes: dict[str, tuple[dict[str, Any], list[str]]] = {
        "grep": (
            {
                "pattern": "Needle",
                "paths": ["src", "README.md"],
                "recursive": True,
                "ignoreCase": True,
                "fixedStrings": True,
            },
            ["grep", "-n", "-r", "-i", "-F", "-D", "skip", "-e", "Needle", "--", "./src", "./README.md"],
        ),
        "ls": ({"path": "src", "all": True}, ["ls", "-1", "-a", "--", "./src"]),
        "cat": ({"path": "README.md"}, ["cat", "--", "./README.md"]),
        "find": (
            {"path": "src", "name": "*.py", "type": "file", "maxDepth": 2},
            ["find", "-P", "./src", "-maxdepth", "2", "-type", "f", "-name", "*.py", "-print"],
        ),
        "head": ({"path": "README.md", "lines": 5}, ["head", "-n", "5", "--", "./README.md"]),
        "tail": ({"path": "README.md", "lines": 7}, ["tail", "-n", "7", "--", "./README.md"]),
        "wc": ({"path": "README.md", "metric": "words"}, ["wc", "-w", "--", "./README.md"]),
        "sort": (
            {"path": "data.txt", "reverse": True, "numeric": True, "unique": True},
            ["sort", "-r", "-n", "-u", "--", "./data.txt"],
        ),
        "uniq": (
            {"path": "data.txt", "count": True, "ignoreCase": True},
            ["uniq", "-c", "-i", "--", "./data.txt"],
        ),
        "cut": (
            {"path": "data.tsv", "delimiter": "\t", "fields": "1,3-5"},
            ["cut", "-d", "\t", "-f", "1,3-5", "--", "./data.tsv"],
        ),
        "stat": ({"path": "README.md"}, ["stat", "--", "./README.md"]),
        "file": ({"path": "README.md"}, ["file", "--", "./README.md"]),
        "du": ({"path": "src", "maxDepth": 1}, ["du", "-k", "-P", "--max-depth=1", "--", "./src"]),
        "pwd": ({}, ["pwd"]),
    }
    assert set(shapes) == set(COMMAND_TOOL_NAMES) == set(ALL_TOOLS)
    for tool, (args, argv) in shapes.items():
        assert build_argv(tool, args) == argv, tool


def test_defaults() -> None:
    assert build_argv("ls", {}) == ["ls", "-1", "--", "."]
    assert build_argv("find", {}) == ["find", "-P", ".", "-maxdepth", "8", "-print"]
    assert build_argv("head", {"path": "a"}) == ["head", "-n", "20", "--", "./a"]
    assert build_argv("wc", {"path": "a"}) == ["wc", "-l", "--", "./a"]
    assert build_argv("du", {"path": "."}) == ["du", "-k", "-P", "--max-depth=1", "--", "."]
    assert build_argv("cut", {"path": "a", "fields": "2-"}) == ["cut", "-f", "2-", "--", "./a"]


def test_the_factory_returns_14_unregistered_tools() -> None:
    tools = create_read_only_command_tools()
    assert [tool.name for tool in tools] == list(ALL_TOOLS)
    for tool in tools:
        assert tool.effects == ("execute",)
        assert tool.requires_approval is False
        assert tool.input_schema["additionalProperties"] is False
        assert tool.description
    assert create_read_only_command_tools() is not tools


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("max_entries", 0),
        ("max_entries", 10_001),
        ("max_entries", True),
        ("max_output_bytes", 1024 * 1024 + 1),
        ("max_output_bytes", -1),
        ("max_output_bytes", 1.5),
        ("max_error_bytes", 64 * 1024 + 1),
        ("max_error_bytes", "8192"),
    ],
)
def test_s06_limits_outside_the_hard_caps_raise(option: str, value: object) -> None:
    with pytest.raises(ValidationError, match=option) as info:
        create_read_only_command_tools(**{option: value})  # type: ignore[arg-type]
    assert info.value.code == "invalid_limit"


def test_the_hard_caps_themselves_are_allowed() -> None:
    tools = create_read_only_command_tools(
        max_entries=10_000, max_output_bytes=1024 * 1024, max_error_bytes=65536
    )
    assert len(tools) == 14


def test_build_argv_unknown_tool() -> None:
    with pytest.raises(ValidationError, match="no read-only command tool"):
        build_argv("rm", {"path": "a"})


def _code(tool: str, args: object) -> str:
    with pytest.raises(ValidationError) as info:
        build_argv(tool, args)  # type: ignore[arg-type]
    return info.value.code


def test_a01_grep_pattern_always_follows_e() -> None:
    argv = build_argv("grep", {"pattern": "-f/tmp/outside/secret.txt", "paths": ["file"]})
    assert argv == ["grep", "-n", "-D", "skip", "-e", "-f/tmp/outside/secret.txt", "--", "./file"]


@pytest.mark.parametrize(
    "pattern", ["--file=/outside/secret.txt", "-r", "--include=*", "-R", "--exclude-from=x"]
)
def test_a02_option_like_patterns_are_literal(pattern: str) -> None:
    argv = build_argv("grep", {"pattern": pattern, "paths": ["a"]})
    assert argv[argv.index("-e") + 1] == pattern
    assert argv.count(pattern) == 1
    assert "-R" not in argv[: argv.index("-e")]


def test_a04_find_name_is_only_the_argument_of_name() -> None:
    assert build_argv("find", {"path": "start", "name": "-exec"}) == [
        "find",
        "-P",
        "./start",
        "-maxdepth",
        "8",
        "-name",
        "-exec",
        "-print",
    ]


def test_a05_a_whole_expression_is_one_glob() -> None:
    argv = build_argv("find", {"name": "x -o -exec rm {} ;"})
    assert argv[-3:] == ["-name", "x -o -exec rm {} ;", "-print"]


@pytest.mark.parametrize("start", ["-L", "-H", "-D", "-O3", "-exec", "-delete"])
def test_a06_find_start_points_are_dot_slash_paths(start: str) -> None:
    argv = build_argv("find", {"path": start})
    assert argv[:3] == ["find", "-P", f"./{start}"]
    assert start not in argv


@pytest.mark.parametrize("tool", ALL_TOOLS)
@pytest.mark.parametrize("extra", UNKNOWN_FIELDS)
def test_a07_unknown_fields_are_refused_for_every_tool(tool: str, extra: dict[str, Any]) -> None:
    base = {"pattern": "x", "paths": ["a"]} if tool == "grep" else {} if tool == "pwd" else {"path": "a"}
    if tool == "cut":
        base["fields"] = "1"
    assert _code(tool, {**base, **extra}) == "unknown_field"


@pytest.mark.parametrize("key", ["--compress-program=sh", "1 -o x", "--output=x", "1"])
def test_a08_sort_has_no_key_field(key: str) -> None:
    assert _code("sort", {"path": "a", "key": key}) == "unknown_field"
    assert _code("sort", {"path": "a", "output": "x"}) == "unknown_field"


def test_a10_uniq_takes_exactly_one_operand() -> None:
    assert _code("uniq", {"path": "a", "paths": ["a", "b"]}) == "unknown_field"
    assert _code("uniq", {"path": ["a", "b"]}) == "invalid_path"
    assert _code("uniq", {"path": "a", "output": "b"}) == "unknown_field"
    argv = build_argv("uniq", {"path": "a", "count": True})
    assert argv == ["uniq", "-c", "--", "./a"]


@pytest.mark.parametrize(
    "lines", ["10; rm -rf /", "-f", "+1", -5, 0, 1001, 1e12, "1000000000000000000000", True, 5.0, None]
)
@pytest.mark.parametrize("tool", ["head", "tail"])
def test_a12_line_counts_are_integers_in_range(tool: str, lines: object) -> None:
    assert _code(tool, {"path": "a", "lines": lines}) == "out_of_range"


def test_a12_follow_options_are_never_emitted() -> None:
    for lines in (1, 20, 1000):
        argv = build_argv("tail", {"path": "a", "lines": lines})
        assert argv == ["tail", "-n", str(lines), "--", "./a"]


@pytest.mark.parametrize(
    ("fields", "delimiter", "code"),
    [
        ("--output-delimiter=$(id)", None, "invalid_fields"),
        ("1-3 --complement", None, "invalid_fields"),
        ("0", None, "invalid_fields"),
        ("1,,2", None, "invalid_fields"),
        ("-3", None, "invalid_fields"),
        ("", None, "invalid_type"),
        ("1\n2", None, "control_character"),
        ("1", "\n", "invalid_delimiter"),
        ("1", "ab", "invalid_delimiter"),
        ("1", "", "invalid_delimiter"),
        ("1", "\x00", "invalid_delimiter"),
        ("1", "\u00e9", "invalid_delimiter"),
        ("1", 9, "invalid_delimiter"),
    ],
)
def test_a13_cut_fields_and_delimiter_grammar(fields: str, delimiter: object, code: str) -> None:
    args: dict[str, Any] = {"path": "a", "fields": fields}
    if delimiter is not None:
        args["delimiter"] = delimiter
    assert _code("cut", args) == code


def test_a13_valid_cut_arguments() -> None:
    assert build_argv("cut", {"path": "a", "fields": "1,3-5,7-", "delimiter": "-"}) == [
        "cut",
        "-d",
        "-",
        "-f",
        "1,3-5,7-",
        "--",
        "./a",
    ]


@pytest.mark.parametrize("depth", [-1, 33, 10**9, "--files0-from=list", "-L", True, 1.0])
def test_a14_du_depth_is_checked(depth: object) -> None:
    assert _code("du", {"path": ".", "maxDepth": depth}) == "out_of_range"


def test_a14_du_never_follows_links_nor_reads_a_file_list() -> None:
    argv = build_argv("du", {"path": "-L", "maxDepth": 32})
    assert argv == ["du", "-k", "-P", "--max-depth=32", "--", "./-L"]
    assert not any(arg.startswith("--files0") for arg in argv)


@pytest.mark.parametrize(
    ("path", "expected"), [("a//b", "./a/b"), ("./a", "./a"), ("a/", "./a"), ("a/./b", "./a/b"), (".", ".")]
)
def test_p10_argv_carries_the_normalised_dot_slash_form(path: str, expected: str) -> None:
    assert build_argv("cat", {"path": path})[-1] == expected
    assert build_argv("find", {"path": path})[2] == expected


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("../x", "path_traversal"),
        ("a/../../x", "path_traversal"),
        ("a/..", "path_traversal"),
        ("/etc/passwd", "absolute_path"),
        ("a\\b", "backslash"),
        ("C:/x", "drive_letter"),
        ("", "empty_path"),
        ("a\x00b", "nul_byte"),
        ("a\nb", "control_character"),
        ("evil\u202etxt.exe", "invisible_character"),
        ("a" * 5000, "path_too_long"),
    ],
)
def test_path_rules_apply_to_every_path_field(path: str, code: str) -> None:
    assert _code("cat", {"path": path}) == code
    assert _code("grep", {"pattern": "x", "paths": ["ok", path]}) == code
    assert _code("find", {"path": path}) == code


def test_refusals_are_typed() -> None:
    with pytest.raises(PathError):
        build_argv("ls", {"path": "/"})
    with pytest.raises(ToolValidationError):
        build_argv("grep", {"pattern": "x", "paths": []})
    with pytest.raises(ToolValidationError):
        build_argv("grep", {"pattern": "x", "paths": ["a"] * 17})
    with pytest.raises(ToolValidationError):
        build_argv("find", {"name": "a/b"})
    with pytest.raises(ToolValidationError):
        build_argv("find", {"type": "symlink"})
    with pytest.raises(ToolValidationError):
        build_argv("cat", [])  # type: ignore[arg-type]
    with pytest.raises(ToolValidationError):
        build_argv("cat", {})


# -- property 2 ---------------------------------------------------------------------------------------

_TEXT = st.one_of(st.sampled_from(OPTION_LIKE), st.text(max_size=30))
_PATH = st.one_of(
    st.sampled_from(OPTION_LIKE), st.sampled_from(["a", "a//b", "./-x", ".", "sub/"]), st.text(max_size=12)
)
_INT = st.one_of(
    st.integers(-3, 1100), st.booleans(), st.floats(allow_nan=False), st.sampled_from(OPTION_LIKE)
)
_FLAG = st.one_of(st.booleans(), st.integers(0, 1), st.sampled_from(OPTION_LIKE))
_FIELD_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "pattern": _TEXT,
    "name": _TEXT,
    "fields": st.one_of(st.sampled_from(["1", "1,3-5", "2-"]), _TEXT),
    "delimiter": st.one_of(st.sampled_from([",", "\t", "-", ":"]), _TEXT),
    "path": _PATH,
    "paths": st.lists(_PATH, min_size=0, max_size=4),
    "lines": _INT,
    "maxDepth": _INT,
    "metric": st.sampled_from(["lines", "words", "bytes", "-c", "chars"]),
    "type": st.sampled_from(["file", "directory", "f", "-exec"]),
    **{
        key: _FLAG
        for key in ("recursive", "ignoreCase", "fixedStrings", "all", "reverse", "numeric", "unique", "count")
    },
}
_BOOLEAN_FLAGS = {
    "grep": {"-r": "recursive", "-i": "ignoreCase", "-F": "fixedStrings"},
    "ls": {"-a": "all"},
    "sort": {"-r": "reverse", "-n": "numeric", "-u": "unique"},
    "uniq": {"-c": "count", "-i": "ignoreCase"},
}
_FIXED_FLAGS = {"grep": {"-n"}, "ls": {"-1"}, "wc": {"-l", "-w", "-c"}, "du": {"-k", "-P"}}
_VALUE_OPTIONS: dict[str, dict[str, str | None]] = {
    "grep": {"-e": "pattern", "-D": None},
    "cut": {"-d": "delimiter", "-f": "fields"},
    "head": {"-n": "lines"},
    "tail": {"-n": "lines"},
}


@st.composite
def _calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    tool = draw(st.sampled_from(ALL_TOOLS))
    properties = next(t for t in create_read_only_command_tools() if t.name == tool).input_schema[
        "properties"
    ]
    keys = draw(st.lists(st.sampled_from(sorted(_FIELD_VALUES)), max_size=6, unique=True))
    known = [key for key in properties if draw(st.booleans())]
    args = {key: draw(_FIELD_VALUES[key]) for key in {*known, *keys}}
    return tool, args


def _check_operand(operand: str) -> None:
    assert operand == "." or operand.startswith("./")
    validate_workspace_path(operand)


def _check_find(argv: list[str], args: dict[str, Any]) -> None:
    assert argv[1] == "-P"
    _check_operand(argv[2])
    assert argv[-1] == "-print"
    pairs = argv[3:-1]
    assert len(pairs) % 2 == 0
    for option, value in zip(pairs[::2], pairs[1::2], strict=True):
        assert option in {"-maxdepth", "-type", "-name"}
        assert value == args["name"] if option == "-name" else value.isalnum()


def _check_value(tool: str, key: str | None, value: str, args: dict[str, Any]) -> None:
    if key is None:
        assert value == "skip"
    elif key == "lines":
        assert value == str(args.get("lines", 20))
    else:
        assert value == args[key]


def _check_flag(tool: str, option: str, args: dict[str, Any]) -> None:
    if option in _BOOLEAN_FLAGS.get(tool, {}):
        assert args[_BOOLEAN_FLAGS[tool][option]] is True
    elif tool == "du" and option.startswith("--max-depth="):
        assert option == f"--max-depth={args.get('maxDepth', 1)}"
    else:
        assert option in _FIXED_FLAGS.get(tool, set()), option


def _check_options(tool: str, argv: list[str], args: dict[str, Any]) -> None:
    """Walk the options: each is a fixed flag, a flag its boolean field asked for, or an option whose
    value follows it; the first ``--`` in option position ends them and every operand is ``./path``."""
    values = _VALUE_OPTIONS.get(tool, {})
    position = 1
    while argv[position] != "--":
        option = argv[position]
        if option in values:
            _check_value(tool, values[option], argv[position + 1], args)
            position += 2
        else:
            _check_flag(tool, option, args)
            position += 1
    for operand in argv[position + 1 :]:
        _check_operand(operand)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_calls())
def test_property_2_user_values_never_take_option_position(call: tuple[str, dict[str, Any]]) -> None:
    tool, args = call
    try:
        argv = build_argv(tool, args)
    except ValidationError as error:
        assert error.code
        return
    assert argv[0] == tool
    if tool == "pwd":
        assert argv == ["pwd"]
    elif tool == "find":
        _check_find(argv, args)
    else:
        _check_options(tool, argv, args)


def test_the_factories_are_public_names() -> None:
    import ditto_tui
    from ditto_tui import interaction

    for name in (
        "create_read_only_command_tools",
        "create_web_search_tool",
        "create_brave_web_search_provider",
    ):
        assert getattr(ditto_tui, name) is getattr(interaction, name)
    for name in ("build_argv", "CommandTool", "WebSearchProvider", "WebSearchResult", "WebSearchError"):
        assert name in interaction.__all__ and hasattr(interaction, name)
