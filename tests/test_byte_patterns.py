"""A KB regex as the prefilter searches it, in raw bytes."""

from __future__ import annotations

import re

import pytest

from triage.kb.byte_patterns import bytes_problem, text_escapes_as_characters


@pytest.mark.parametrize(
    ("pattern", "line"),
    [
        ("no member named \\u2018foo\\u2019", "error: no member named \u2018foo\u2019 in 'Bar'"),
        ("smile \\U0001F600 now", "smile \U0001f600 now"),
        ("a\\N{EM DASH}b", "a\u2014b"),
        ("[\\u2018\\u2019']x", "\u2019x"),
        ("1\\u002e5", "1.5"),  # the dot it names is a literal, as in the text pattern
    ],
)
def test_a_text_escape_is_searched_as_the_bytes_of_its_character(pattern, line):
    as_bytes = re.compile(text_escapes_as_characters(pattern).encode(), re.IGNORECASE)
    assert re.search(pattern, line) and as_bytes.search(line.encode())
    assert bytes_problem(pattern) is None


def test_other_escapes_and_an_escaped_backslash_are_left_as_they_are():
    assert text_escapes_as_characters(r"\d+\s\\u2018\bx") == r"\d+\s\\u2018\bx"
    assert text_escapes_as_characters("1\\u002e5") == "1\\.5"


def test_what_no_bytes_pattern_can_say_is_named():
    assert "bytes pattern" in (bytes_problem("(?u)widget") or "")
