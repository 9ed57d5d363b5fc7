"""Which patterns tell digits apart, and their widened forms (see triage.engine.digits)."""

from __future__ import annotations

import re

from triage.engine.digits import ANY_DIGIT, digit_patterns

MASK = str.maketrans("123456789", "000000000")


def test_patterns_that_name_digits_are_widened_and_bare_codes_kept_apart():
    named, codes = digit_patterns(
        [r"\b507035\b", r"EI0006: x", r"step \d+ of [0-9]+", r"(?i:foo|errors?\s*=\s*0\b)", r"alloc fail|207018"]
    )
    assert codes == [r"\b\d\d\d\d\d\d\b", r"\d\d\d\d\d\d"]
    assert len(named) == 2  # EI0006 and `errors = 0`: `step \d+`, `foo` and `alloc fail` tell no digit apart
    assert re.search(named[0], "EI0000: x") and re.search(named[1], "ERRORS = 0", re.IGNORECASE)


def test_a_widened_pattern_matches_the_masked_line_wherever_the_pattern_matches_the_line():
    cases = [
        (r"error code (?:is )?207018\b", "RuntimeError: error code is 207018"),
        (r"Ascend910[^B]|310P\d?", "SoC Ascend910A and 310P3"),
        (r"ERR[0-5]{2}1\d\d|[^0-3]x", "ERR02100 9x"),
        (r"(?<!\d)1070(?:25|33)\b", "code 107033"),
        (r"(?s)rank 7.*died", "rank 7 then died"),
    ]
    for pattern, line in cases:
        assert re.search(pattern, line)
        named, codes = digit_patterns([pattern])
        widened = named + codes
        assert widened and ANY_DIGIT not in widened
        assert any(re.search(w, line.translate(MASK)) for w in widened), pattern
        assert any(re.search(w, line) for w in widened), pattern
