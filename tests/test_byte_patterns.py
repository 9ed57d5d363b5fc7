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


@pytest.mark.parametrize(
    "regex",
    [
        "widget (?:\\u2018|')frob(?:\\u2019|') failed",  # escapes only a text pattern knows
        "(?>widget) frob failed",  # an atomic group (digit analysis walked its items wrongly)
        "(?a)widget\\s+frob failed",  # global flags, which no group of an alternation may hold
        "(?x)widget \\s+ frob \\s+ failed  # a comment, which swallows its group's closing parenthesis",
    ],
)
@pytest.mark.parametrize("prefer", ["hyperscan", "re"])
def test_a_user_kb_regex_python_compiles_is_found_in_a_scan(tmp_path, regex, prefer):
    from triage.engine import Scanner, load_engine_kb
    from triage.engine.prefilter import build_prefilter

    from tests.kb_helpers import entry_data, write_entry

    write_entry(tmp_path, entry_data("odd-regex", "other", signatures=[{"regex": regex, "weight": 3}], examples={}))
    kb, errors = load_engine_kb([str(tmp_path)], include_shipped=False)
    assert not errors
    scanner = Scanner(kb, prefilter=build_prefilter(kb, prefer=prefer))
    scanner.feed_text(
        "step 1\nRuntimeError: widget \u2018frob\u2019 failed\nRuntimeError: widget frob failed\n", "x.log"
    )
    assert [d.id for d in scanner.result().diagnoses] == ["odd-regex"]
