"""The error-sanitisation catalogue E-01 … E-13 (ADVERSARIAL.md), one test per case."""

from __future__ import annotations

import base64
import urllib.parse

import pytest

from ditto_tui.contracts import ExternalResult, InteractionError
from ditto_tui.errors import ValidationError
from ditto_tui.sanitize import (
    REDACTED,
    public_message_from_exception,
    safe_error,
    sanitize_public_message,
    unsafe_reason,
)

OPENAI_KEY = "sk-proj-AbC" + "x1Y2z3" * 8
TOKENS = [
    OPENAI_KEY,
    "sk-ant-api03-" + "Q" * 40,
    "ghp_" + "a1B2c3D4e5" * 4,
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "xoxb-1234567890-0987654321-AbCdEfGhIjKl",
    "AKIAIOSFODNN7EXAMPLE",
    "ASIAIOSFODNN7EXAMPLE",
    "AIzaSyA-1234567890abcdefghijklmnopqrstu",
]


@pytest.mark.parametrize("token", TOKENS)
def test_e01_known_token_prefixes_are_redacted(token: str) -> None:
    message = public_message_from_exception(RuntimeError(f"provider said: invalid key {token} (401)"))
    assert token not in message
    assert message == f"provider said: invalid key {REDACTED} (401)"
    assert unsafe_reason(message) is None


@pytest.mark.parametrize(
    ("header", "kept"),
    [
        (
            "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl",
            "Authorization: Bearer",
        ),
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic"),
        ("Proxy-Authorization: Basic dXNlcjpwYXNz", "Proxy-Authorization: Basic"),
        ("x-api-key: 0123456789abcdef", "x-api-key:"),
        ("X-Subscription-Token: BSAabcdef0123456789", "X-Subscription-Token:"),
        ("api-key: abc123", "api-key:"),
        ("Cookie: session=abc; theme=dark", "Cookie:"),
        ("headers={'authorization': 'Bearer abcdef0123456789'}", "'authorization': 'Bearer"),
    ],
)
def test_e02_credential_header_values_are_redacted(header: str, kept: str) -> None:
    secret = header.rsplit(" ", 1)[1].strip("'}")
    message = sanitize_public_message(f"request failed; sent {header}")
    assert secret not in message
    assert f"{kept} {REDACTED}" in message or f"{kept} '{REDACTED}" in message
    assert unsafe_reason(message) is None


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://u:p@host/", f"https://{REDACTED}@host/"),
        ("https://h/s?api_key=abc123&q=x", f"https://h/s?api_key={REDACTED}&q=x"),
        ("https://h/s?q=x&token=abc123", f"https://h/s?q=x&token={REDACTED}"),
        ("https://h/s?key=abc123", f"https://h/s?key={REDACTED}"),
        ("https://h/s?a=1&signature=abc123", f"https://h/s?a=1&signature={REDACTED}"),
        ("https://h/s?apikey=abc123", f"https://h/s?apikey={REDACTED}"),
        ("https://h/s?password=abc123", f"https://h/s?password={REDACTED}"),
        ("https://h/s?secret=abc123", f"https://h/s?secret={REDACTED}"),
        ("https://h/s?access_token=abc123", f"https://h/s?access_token={REDACTED}"),
    ],
)
def test_e03_url_embedded_secrets_are_redacted(url: str, expected: str) -> None:
    message = sanitize_public_message(f"GET {url} returned 500")
    assert message == f"GET {expected} returned 500"
    assert "abc123" not in message
    assert unsafe_reason(message) is None


def test_e04_configured_secret_and_its_encoded_forms_are_redacted() -> None:
    key = "BSA9f8e7/d6c5+b4a3=21"
    forms = [key, urllib.parse.quote(key, safe=""), base64.b64encode(key.encode()).decode()]
    message = sanitize_public_message(" | ".join(forms), secrets=[key])
    assert message == " | ".join([REDACTED] * 3)
    assert unsafe_reason(message) is None


def test_e04_secret_without_a_known_prefix_is_only_caught_by_exact_value() -> None:
    key = "plainvalue0123456789"
    assert sanitize_public_message(f"rejected {key}") == f"rejected {key}"
    assert sanitize_public_message(f"rejected {key}", secrets=[key]) == f"rejected {REDACTED}"


@pytest.mark.parametrize(
    "path",
    [
        "/home/alice/.ssh/id_rsa",
        "/tmp/pytest-of-alice/pytest-7/w/a",
        "/private/var/folders/xy/T/x",
        "C:\\Users\\alice\\secret.txt",
        "C:/Users/alice/secret.txt",
        "file:///etc/passwd",
        "~/.aws/credentials",
        "\\\\server\\share\\x",
    ],
)
def test_e05_absolute_paths_become_a_placeholder(path: str) -> None:
    message = sanitize_public_message(f"cannot open {path}: denied")
    assert message == "cannot open <path>: denied"
    assert unsafe_reason(f"cannot open {path}: denied") == "message contains an absolute path"


def test_e05_paths_inside_the_workspace_become_relative() -> None:
    message = sanitize_public_message(
        "read /work/ws/src/a.py and /work/ws and /work/wsx/b and /work/ws/../etc/passwd",
        workspace="/work/ws",
    )
    assert message == "read src/a.py and . and <path> and <path>"


def test_e05_urls_are_not_paths() -> None:
    text = "GET https://api.search.brave.com/res/v1/web/search failed"
    assert sanitize_public_message(text) == text
    assert unsafe_reason(text) is None


def test_e06_traceback_keeps_only_the_final_exception_line() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/subprocess.py", line 1955, in _execute_child\n'
        "    raise child_exception_type(errno_num, err_msg, err_filename)\n"
        "FileNotFoundError: [Errno 2] No such file or directory: '/opt/tool/bin/x'\n"
    )
    assert sanitize_public_message(text) == "FileNotFoundError: [Errno 2] No such file or directory: '<path>'"
    assert unsafe_reason(text) is not None


def test_e06_chained_traceback_keeps_the_last_exception() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "a.py", line 1, in f\n'
        "KeyError: 'x'\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\n"
        '  File "a.py", line 3, in f\n'
        "RuntimeError: lookup failed\n"
    )
    assert sanitize_public_message(text) == "RuntimeError: lookup failed"


def test_e06_a_lone_stack_frame_is_replaced() -> None:
    message = sanitize_public_message('failed at File "/srv/app.py", line 12, in handler')
    assert message == "failed at <frame>, in handler"
    assert unsafe_reason('at File "app.py", line 12') == "message contains a stack frame"


JS_FRAMES = [
    "Error: boom at readConfig (/home/alice/app/config.js:12:7)",
    "TypeError: x is undefined at Object.<anonymous> (src/index.js:3:15)",
    "failed at process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
    "failed at async Promise.all (index 0)",
    "failed at Array.forEach (<anonymous>)",
    "failed at new Store (webpack:///./src/store.ts:10:3)",
    "failed at Object.load [as read] (lib/x.js:1:2)",
    "failed at node:internal/main/run_main_module:28:49",
    "failed at file:///srv/app/main.mjs:4:11",
    "readConfig@https://example.com/app.js:12:7",
    "Error: no config loadConfig@src/app.js:12:7",
    "@debugger:1:1",
    '    at @https://x.example/y.js:1:2File "',
    "failed at src/app.js:12:7then more",
    "    at )@https://x.example/y.js:1:2",
    "failed at (src/app.js:12:7",
    "failed at " + "Z" * 300 + " (src/app.js:12:7)",
]


@pytest.mark.parametrize("message", JS_FRAMES)
def test_seed_e06_javascript_stack_frames_are_refused_like_python_ones(message: str) -> None:
    assert unsafe_reason(message) == "message contains a stack frame"
    with pytest.raises(ValueError, match="stack frame"):
        InteractionError(code="E", message=message)
    safe = sanitize_public_message(message)
    assert "<frame>" in safe and unsafe_reason(safe) is None


def test_seed_e06_a_javascript_stack_keeps_its_error_line() -> None:
    stack = (
        "Error: ENOENT: no such file\n"
        "    at Object.openSync (node:fs:596:3)\n"
        "    at readFileSync (node:fs:464:35)\n"
        "    at main (src/main.js:3:9)"
    )
    safe = sanitize_public_message(stack)
    assert safe.split() == "Error: ENOENT: no such file <frame> <frame> <frame>".split()


@pytest.mark.parametrize(
    "message",
    [
        "meeting at 10:30:00 was moved",
        "look at line 3 of the file",
        "send mail to bob@example.com please",
        "the service at example.com:443 refused",
        "at noon (12:30:45) it failed",
        "ratio 3:4:5 at best",
        "failed at step 2 (of 3)",
    ],
)
def test_seed_e06_ordinary_text_with_at_and_colons_is_no_frame(message: str) -> None:
    assert unsafe_reason(message) is None
    assert sanitize_public_message(message) == message


def test_e07_line_breaks_cannot_forge_log_lines() -> None:
    message = sanitize_public_message("ok\nERROR: approval granted\r\x1b[2K")
    assert message == "ok ERROR: approval granted"
    assert unsafe_reason("ok\nERROR") == "message contains a line break"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("evil\u202etxt.exe", "eviltxt.exe"),
        ("a\u2066b\u2069c", "abc"),
        ("zero\u200bwidth", "zerowidth"),
        ("tag\U000e0049\U000e0047s", "tags"),
        ("bell\x07 nul\x00 del\x7f c1\x9b2J", "bell nul del c12J"),
        ("tab\tseparated", "tab separated"),
    ],
)
def test_e08_control_and_bidi_characters_are_removed(text: str, expected: str) -> None:
    assert sanitize_public_message(text) == expected
    assert unsafe_reason(text) is not None
    assert unsafe_reason(expected) is None


def test_e09_long_message_is_truncated_after_redaction() -> None:
    key = "sk-proj-" + "A" * 48
    message = sanitize_public_message("x" * 500 + " " + key + " tail " * 200_000)
    assert len(message) <= 512
    assert message.endswith("…")
    assert "sk-" not in message and "AAAA" not in message
    assert unsafe_reason(message) is None


def test_e09_limit_is_respected_and_capped_at_512() -> None:
    assert sanitize_public_message("y" * 100, limit=10) == "y" * 9 + "…"
    assert len(sanitize_public_message("y" * 1000, limit=10_000)) == 512
    assert sanitize_public_message("y" * 100, limit=0) == ""


def test_e09_truncation_never_leaves_a_partial_marker() -> None:
    text = "z" * 495 + " Authorization: Bearer abcdefghijklmnop"
    message = sanitize_public_message(text)
    assert message == "z" * 495 + "…"


class _ToolError(Exception):
    pass


def test_e10_chained_exceptions_are_never_serialised() -> None:
    cause = RuntimeError("GET https://h/search?api_key=SECRET123 -> 401 /home/alice/x")
    try:
        try:
            raise cause
        except RuntimeError as inner:
            raise _ToolError("search failed") from inner
    except _ToolError as exc:
        message = public_message_from_exception(exc, secrets=["SECRET123"])
    assert message == "search failed"


def test_e10_exception_args_repr_is_sanitised() -> None:
    exc = OSError(2, "No such file", "/home/alice/.netrc")
    message = public_message_from_exception(exc)
    assert "/home/alice" not in message
    assert message.startswith("[Errno 2] No such file: ") and "FileNotFoundError" not in message
    multi = public_message_from_exception(ValueError("bad\nvalue", "token=abc123"))
    assert multi == f"('bad value', 'token={REDACTED}')"


def test_e10_a_broken_str_does_not_break_reporting() -> None:
    class Hostile(Exception):
        def __str__(self) -> str:
            raise RuntimeError("boom")

    assert public_message_from_exception(Hostile()) == "<unprintable message>"


def test_e11_tool_output_is_data_and_not_redacted_here() -> None:
    """E-11 decision: tool output (content, structured content) is data returned to the model, not an
    error object, and this module does not redact it: a grep line ``password = "hunter2"`` travels
    unchanged in an ``ExternalResult``. Only error messages pass through ``sanitize_public_message``;
    the TUI decides how to display output (with control characters made visible)."""
    line = 'config.ini:3:password = "hunter2"'
    result = ExternalResult(call_id="g1", source="grep", status="success", content=line)
    assert result.content == line
    assert sanitize_public_message(line) == f'config.ini:3:password = "{REDACTED}"'


def test_e12_markup_and_escape_text_are_kept_literally() -> None:
    """E-12: markup such as ``[/b]`` or ``[bold]`` is text, kept as written; complete CSI/OSC sequences
    are removed whole, and of an unterminated escape only the control character is removed."""
    assert sanitize_public_message("bad [/b] tag [bold red]x[/]") == "bad [/b] tag [bold red]x[/]"
    assert sanitize_public_message("clip \x1b]52;c;Y3VybA==\x07 done") == "clip  done"
    assert sanitize_public_message("clip \x1b]52;c;Y3VybA== done") == "clip ]52;c;Y3VybA== done"
    assert safe_error("BAD", "[/b]").message == "[/b]"


def test_e13_server_style_error_goes_through_safe_error() -> None:
    server_message = (
        "MCP error -32603: Internal error\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/mcp/server.py", line 88, in call_tool\n'
        "PermissionError: [Errno 13] Permission denied: '/srv/data/x' "
        "(Authorization: Bearer abcdefghijklmnopqrstuvwx)\x1b[31m"
    )
    error = safe_error("MCP_TOOL_ERROR", server_message, retryable=False)
    assert isinstance(error, InteractionError)
    assert error.message == (
        f"PermissionError: [Errno 13] Permission denied: '<path>' (Authorization: Bearer {REDACTED})"
    )
    assert error.retryable is False


def test_safe_error_rejects_an_invalid_code() -> None:
    with pytest.raises(ValidationError, match="invalid error code"):
        safe_error("bad code!", "x")


def test_safe_error_accepts_exceptions() -> None:
    assert safe_error("E", KeyError("k")).message == "missing key: 'k'"


def test_unsafe_reason_accepts_ordinary_messages() -> None:
    for text in ["No matching record", "The destination rejected the result", "a/b and 1/2", ""]:
        assert unsafe_reason(text) is None


def test_unsafe_reason_names_each_rule() -> None:
    assert unsafe_reason("x" * 513) == "message is longer than 512 characters"
    assert unsafe_reason("key\u200bword") == "message contains control, bidi or invisible characters"
    assert unsafe_reason("use sk-" + "a" * 20) == "message contains a credential marker"
    assert unsafe_reason("password=x") == "message contains a credential marker"
    assert unsafe_reason(f"password={REDACTED}") is None
    assert unsafe_reason(1) == "message is not a string"  # type: ignore[arg-type]


def test_non_string_input_is_converted() -> None:
    assert sanitize_public_message(42) == "42"
    assert sanitize_public_message(None) == "None"
    assert sanitize_public_message(b"/etc/x") == "b'<path>'"


def test_a_single_secret_string_is_not_split_into_characters() -> None:
    assert sanitize_public_message("key abc123 end", secrets="abc123") == f"key {REDACTED} end"
