"""The string formats checked with the standard library (``date-time``, ``time``, ``uri``,
``uri-reference``, ``hostname``, ``duration``): what the installed jsonschema checks only with optional
packages. MCP elicitation asks for ``uri`` and ``date-time``; edited tool arguments are checked the
same way."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ditto_tui.schema import (
    check_against_schema,
    is_date_time,
    is_duration,
    is_hostname,
    is_time,
    is_uri,
    is_uri_reference,
)
from tests.properties import examples


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("2025-01-31T09:30:00Z", True),
        ("2025-01-31t09:30:00.125+01:00", True),
        ("2024-02-29T00:00:00-05:30", True),
        ("2016-12-31T23:59:60Z", True),  # a leap second
        ("2025-02-29T09:30:00Z", False),  # no 29 February in 2025
        ("2025-13-01T09:30:00Z", False),
        ("2025-01-31T24:00:00Z", False),
        ("2025-01-31T09:60:00Z", False),
        ("2025-01-31T09:30:00", False),  # no offset
        ("2025-01-31 09:30:00Z", False),
        ("2025-01-31", False),
        ("2025-01-31T09:30:00+24:00", False),
        ("\uff12025-01-31T09:30:00Z", False),  # a full-width digit
        ("2025-01-31T09:30:00Z\n", False),
        ("tomorrow", False),
    ],
)
def test_date_time_is_rfc_3339(text: str, valid: bool) -> None:
    assert is_date_time(text) is valid


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("09:30:00Z", True),
        ("23:59:60.5+01:00", True),
        ("09:30:00", False),
        ("9:30:00Z", False),
        ("25:00:00Z", False),
    ],
)
def test_time_is_a_full_time_with_its_offset(text: str, valid: bool) -> None:
    assert is_time(text) is valid


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("https://example.com/a?b=c#d", True),
        ("mailto:ada@example.com", True),
        ("urn:isbn:0451450523", True),
        ("http://[::1]:8080/", True),
        ("http://x/%41", True),
        ("example.com", False),  # no scheme
        ("/relative/path", False),
        ("http://exa mple.com", False),
        ("http://x/%zz", False),
        ("http://例え.jp", False),  # an IRI, not a URI
        ("1http://x", False),
        ("", False),
    ],
)
def test_uri_needs_a_scheme_and_uri_characters(text: str, valid: bool) -> None:
    assert is_uri(text) is valid


@pytest.mark.parametrize(
    ("text", "valid"),
    [("/relative/path", True), ("../up?q=1", True), ("", True), ("a b", False), ("%g0", False)],
)
def test_uri_reference_may_be_relative(text: str, valid: bool) -> None:
    assert is_uri_reference(text) is valid


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("example.com", True),
        ("localhost", True),
        ("example.com.", True),
        ("a-b.c0", True),
        ("-bad.com", False),
        ("bad-.com", False),
        ("ex_ample.com", False),
        ("a..b", False),
        ("a" * 64 + ".com", False),
        (".".join(["a" * 63] * 4), False),  # 255 characters
        ("", False),
        (".", False),
    ],
)
def test_hostname_is_rfc_1123(text: str, valid: bool) -> None:
    assert is_hostname(text) is valid


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("P1DT2H", True),
        ("PT30M", True),
        ("P2W", True),
        ("P1Y2M3D", True),
        ("PT0S", True),
        ("P", False),
        ("PT", False),
        ("P1DT", False),
        ("P1D2H", False),  # hours need the T
        ("P2D1Y", False),  # out of order
        ("P1Y2W", False),  # weeks stand alone
        ("P\u0661D", False),  # an Arabic-Indic digit
    ],
)
def test_duration_is_iso_8601(text: str, valid: bool) -> None:
    assert is_duration(text) is valid


def test_a_schema_checks_these_formats_and_leaves_other_types_alone() -> None:
    schema = {
        "type": "object",
        "properties": {
            "when": {"format": "date-time"},
            "site": {"format": "uri"},
            "host": {"format": "hostname"},
        },
    }
    good = {"when": "2025-01-31T09:30:00Z", "site": "https://x/", "host": "x"}
    assert check_against_schema(schema, good) == []
    assert check_against_schema(schema, {"when": 5, "site": None, "host": ["not", "a", "string"]}) == []
    assert check_against_schema(schema, {"when": "tomorrow", "site": "x.com", "host": "a b"}) == [
        "host: 'a b' is not a 'hostname'",
        "site: 'x.com' is not a 'uri'",
        "when: 'tomorrow' is not a 'date-time'",
    ]


def test_the_drafts_own_checks_still_hold() -> None:
    schema = {"type": "object", "properties": {"email": {"format": "email"}, "day": {"format": "date"}}}
    assert check_against_schema(schema, {"email": "nope", "day": "31/01/2025"}) == [
        "day: '31/01/2025' is not a 'date'",
        "email: 'nope' is not a 'email'",
    ]


@settings(max_examples=examples(200))
@given(
    st.datetimes(timezones=st.timezones() | st.just(datetime.UTC)),
)
def test_every_aware_datetime_written_by_python_is_a_date_time(moment: datetime.datetime) -> None:
    # isoformat() writes seconds, and an offset in whole minutes for the zones here
    text = moment.isoformat(timespec="microseconds")
    offset = moment.utcoffset()
    if offset is not None and offset.seconds % 60:
        return  # historical zones with offsets in seconds have no RFC 3339 spelling
    assert is_date_time(text), text
    assert is_time(text.split("T", 1)[1]), text
