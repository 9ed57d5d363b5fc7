"""Bounded repeats loosened for the prefilter (see triage.engine.repeats): never fewer matches."""

from __future__ import annotations

import re

from triage.engine.repeats import unbounded_repeats
from triage.kb.loader import load_kb
from triage.kb.paths import kb_dirs


def test_bounded_repeats_become_unbounded_and_literal_braces_stay():
    cases = {
        r"a{0,120}b": r"a*b",
        r"[^\n]{0,120}x": r"[^\n]*x",
        r"(?:ab){3,100}": r"(?:ab){3,}",
        r"x{1,9}?y": r"x+?y",
        r"a{,50}": r"a*",
        r"\d{4}[-/]\d{2}": r"\d{4}[-/]\d{2}",  # exact counts and small bounds stay
        r"x{2,5}": r"x{2,5}",
        r"\{0,20}": r"\{0,20}",  # an escaped brace is a literal
        r"[{]{0,20}": r"[{]*",
        r"[]{0,9}]x": r"[]{0,9}]x",  # inside a class (`]` first is a member) a brace is a literal
        r"[^]{0,9}]x": r"[^]{0,9}]x",
    }
    for pattern, loosened in cases.items():
        assert unbounded_repeats(pattern) == loosened, pattern


def test_every_kb_regex_loosened_compiles_and_matches_wherever_it_did(engine_kb):
    kb, _ = load_kb(kb_dirs(None))
    lines = [line for entry in kb.entries.values() for example in entry.examples.match for line in example.splitlines()]
    checked = 0
    for signature in engine_kb.signatures:
        if signature.regex_source is None:
            continue
        original = re.compile(signature.regex_source, re.IGNORECASE)
        loosened = re.compile(unbounded_repeats(signature.regex_source), re.IGNORECASE)
        for line in lines:
            if original.search(line):
                assert loosened.search(line), (signature.regex_source, line)
                checked += 1
    assert checked > 500
