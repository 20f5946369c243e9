"""Property 4 of ADVERSARIAL §2.3: whatever goes in, the public message is safe and holds no secret."""

from __future__ import annotations

import base64
import re
import urllib.parse

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ditto_tui.sanitize import public_message_from_exception, sanitize_public_message, unsafe_reason
from tests.properties import examples

SECRETS = ["hunter2-very-secret", "BSAxyz0123456789abcdef", "p@ss word/+=", "ünïcode-sëcret"]
PATHS = ["/home/alice/.ssh/id_rsa", "/tmp/pytest-1/w/a", "/private/var/x", "/etc/passwd"]
CONTROL_TEXT = ["\n", "\r\n", "\r", "\t", "\x00", "\x1b", "\x1b[2K", "\x1b]52;c;Y3Vy\x07", "\x1b]8;;", "\x9b"]
INVISIBLE_TEXT = ["\x85", "\u202e", "\u200b", "\u2028", "\U000e0041", "\ufeff"]
FRAME_TEXT = [
    "Traceback (most recent call last):\n",
    '  File "/usr/x.py", line 12, in f\n',
    'File "',
    '", line ',
    "    at ",
    "at async ",
    "readConfig (",
    "src/app.js:12:7)",
    "node:internal/x:1:2",
    ":10:5",
    "@https://x.example/y.js:1:2",
    "(<anonymous>)",
]
HEADER_TEXT = ["Authorization: Bearer ", "Authorization: ", "Bearer ", "Basic ", "Proxy-Authorization: "]
HEADER_TEXT += [
    "x-api-key: ",
    "X-Subscription-Token: ",
    "Cookie: a=1; b=2",
    "api-key",
    ": ",
    "7",
    "ValueError: ",
]
QUERY_TEXT = ["api_key=", "token=", "key=", "password = ", "secret", "=", "?api_key=", "&signature=", "@"]
URL_TEXT = ["https://", "http://u:p@host/", "://", "C:\\Users\\alice\\x", "C:/x", "file:///etc/passwd"]
PATH_TEXT = ["/", "//", "~/", "~/.aws/credentials", "\\\\server\\share"]
TOKEN_TEXT = ["sk-", "sk-proj-", "ghp_", "github_pat_", "xoxb-", "AKIA", "AIza", "eyJ", "A" * 20, "a1" * 10]
TOKEN_TEXT += ["-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----"]
OTHER_TEXT = ["[REDACTED]", "<path>", "<frame>", "…", "[", "]", "[/b]", ":", " ", '"', "'", ".", "Z" * 300]
FRAGMENTS = CONTROL_TEXT + INVISIBLE_TEXT + FRAME_TEXT + HEADER_TEXT + QUERY_TEXT + URL_TEXT + PATH_TEXT
FRAGMENTS += TOKEN_TEXT + OTHER_TEXT + SECRETS + PATHS
ENCODED = [urllib.parse.quote(s, safe="") for s in SECRETS]
ENCODED += [base64.b64encode(s.encode()).decode() for s in SECRETS]

hostile_text = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS + ENCODED), st.text(max_size=12)), max_size=40
).map("".join)

# An independent reading of the property, simpler than the sanitiser's own rules.
ROOTED_PATH = re.compile(r"(?:^|[\s\"'(=,;|{<:])/\.?\w")
STACK_FRAME = re.compile(
    r'File "[^"]*", line \d+'
    r"|\bat [^\s()]+ \([^()\s]*[A-Za-z][^()\s:]*:\d+:\d+\)"
    r"|\bat \S*[A-Za-z]\w*\.js:\d+:\d+"
)
CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f]")

PROPERTY = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def assert_public(message: str, secrets: list[str]) -> None:
    assert unsafe_reason(message) is None, (message, unsafe_reason(message))
    assert "\n" not in message and "\r" not in message and "\x1b" not in message
    assert not CONTROLS.search(message)
    assert not ROOTED_PATH.search(message), message
    assert not STACK_FRAME.search(message)
    for secret in secrets:
        assert secret not in message


def assert_not_rooted(message: str, paths: list[str]) -> None:
    """A known path may survive only glued to a preceding name (``sk-/home/…`` is a relative path)."""
    for path in paths:
        for match in re.finditer(re.escape(path), message):
            assert match.start() > 0 and re.match(r"[\w.\-~/@%+*&?!^$#\[]", message[match.start() - 1])


@PROPERTY
@given(st.text())
def test_any_text_becomes_a_public_message(text: str) -> None:
    assert_public(sanitize_public_message(text), [])


@PROPERTY
@given(hostile_text)
def test_text_built_around_secrets_and_paths_is_public(text: str) -> None:
    message = sanitize_public_message(text, secrets=SECRETS)
    assert_public(message, SECRETS + ENCODED)
    assert_not_rooted(message, PATHS)


@PROPERTY
@given(hostile_text, st.lists(st.text(min_size=1, max_size=12), max_size=3), st.integers(-5, 700))
def test_any_secret_and_limit_are_respected(text: str, secrets: list[str], limit: int) -> None:
    message = sanitize_public_message(text + "".join(secrets), secrets=secrets, limit=limit)
    assert_public(message, secrets)
    assert len(message) <= max(0, min(limit, 512))


@PROPERTY
@given(hostile_text)
def test_sanitising_is_idempotent(text: str) -> None:
    once = sanitize_public_message(text, workspace="/home/alice")
    assert sanitize_public_message(once) == once


@PROPERTY
@given(hostile_text)
def test_a_safe_message_is_kept_as_written(text: str) -> None:
    text = text.strip()
    if unsafe_reason(text) is None:
        assert sanitize_public_message(text) == text


@PROPERTY
@given(hostile_text)
def test_unsafe_reason_is_total(text: str) -> None:
    reason = unsafe_reason(text)
    assert reason is None or isinstance(reason, str)


@PROPERTY
@given(st.lists(st.one_of(hostile_text, st.integers(), st.none()), max_size=3))
def test_exceptions_become_public_messages(args: list[object]) -> None:
    message = public_message_from_exception(RuntimeError(*args), secrets=SECRETS)
    assert_public(message, SECRETS)
    assert_not_rooted(message, PATHS)
    assert message and not message.startswith("RuntimeError")
