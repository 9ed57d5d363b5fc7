"""Which patterns tell digits apart, and their widened forms (see triage.engine.digits)."""

from __future__ import annotations

import re

from triage.engine.digits import ANY_DIGIT, MARK, digit_patterns, digit_reads

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


def readable(pattern: str, line: str) -> list[str]:
    """The digit runs of `line` where a digit `pattern` names can fall, by its probe."""
    probes = [p for ps in digit_reads([pattern])[0].values() for p in ps]
    masked = line.translate(MASK)
    runs = [m.span() for m in re.finditer(r"\d+", masked)]
    return [
        line[a:b]
        for a, b in runs
        if any(re.search(p, masked[:a] + MARK * (b - a) + masked[b:], re.IGNORECASE) for p in probes)
    ]


def test_a_probe_finds_the_runs_a_named_digit_can_fall_on_not_those_any_character_can():
    line = "[2026-11-28 02:00:01] EZ1001: [PID: 123456] self not implemented, should be in list [1, 2]"
    assert readable(r"\bEZ1001\b.{0,200}should be", line) == ["1001"]
    assert readable(r"EI0006|EZ\d{4}", line) == []  # `EZ\d{4}` names no digit: only EI0006 tells them apart
    assert readable(r"code (?:is )?50701[58]", "error code is 507015 at 2026") == ["507015"]
    # Wherever the pattern may align: both runs after "step " can be the named digit.
    assert readable(r"step 7", "step 1 then step 2") == ["1", "2"]


def test_a_probe_that_cannot_tell_where_digits_are_read_says_so():
    probes, _ = digit_reads([r"(?<=rank 3)x5"])
    assert ANY_DIGIT in [p for ps in probes.values() for p in ps]
