"""The literal gate in front of the error-line patterns: it only ever skips searches that would
have found nothing, on every real line we have."""

import re
from pathlib import Path

import pytest

import triage.engine.error_lines as error_lines
from triage.engine import confirm, literal_gate
from triage.engine.context import JobContext
from triage.engine.literal_gate import gate_text, may_match, required_literals

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("pattern", "literals"),
    [
        (r"\bnan\b|\boverflow\b|out of memory", ("nan", "out of memory", "overflow")),
        (r"(?i:\bSegmentation Fault\b)", ("segmentation fault",)),
        (r"\s\d{2}:\d{2}:\d{2} x", ("00:00:00 x",)),  # digits are read as '0'
        (r"\s[EF]\d{4} ", ("e0000 ", "f0000 ")),  # a small class continues the run once per character
        # groups of a few fixed strings, optional parts and counted ones are spelled out in full
        (r"\s(?:error|fatal)(?:: |\]) code", ("error:  code", "error] code", "fatal:  code", "fatal] code")),
        (r"\serror[ _]?code", ("error code", "error_code", "errorcode")),
        (r"\sx(?:ab|cd)+y", ("xab", "xcd")),  # an unbounded repeat ends the run after its first copy
        (r"\s(?:ab|cd)\s+xyz\s", ("xyz",)),  # the most letters win ...
        (r"\sab\s+cd\s+efg\s00:00:00", ("efg",)),  # ... then the longest
        (r"\s(?:ab|cd)\s+ef\s", ("ef",)),  # ... then the fewest
        (r"\s(?:ab|cd|e)", None),  # an alternative with no string long enough: nothing to test
        (r"\s[^x]+", None),
    ],
)
def test_required_literals(pattern, literals):
    assert required_literals(pattern) == literals


def test_patterns_re_finds_fast_by_themselves_are_not_gated():
    assert required_literals(r"^\s*what\(\):\s+(\S.*)$") is None
    assert required_literals(r"Traceback \(most recent call last\)") is None


def test_a_pattern_that_ignores_case_is_gated_even_where_it_starts_with_a_letter():
    # `re` looks for a literal first character in C only where the case is kept: `vllm[_-]ascend`
    # with IGNORECASE is tried at every position of every line shown to the job context.
    assert required_literals(r"vllm[_-]ascend", re.IGNORECASE) == ("vllm-ascend", "vllm_ascend")


def test_literals_the_kb_cache_kept_are_used_without_reading_the_pattern_again(monkeypatch):
    pattern = re.compile(r"\s(?:alpha|beta)gamma")
    monkeypatch.setattr(literal_gate, "_CACHED", {})
    # Not what the tree tells (alphagamma, betagamma): the test can see which literals were used.
    literal_gate.use_gate_rows([(pattern.pattern, pattern.flags, ["betagamma"])])
    monkeypatch.setattr(literal_gate, "required_literals", lambda *_: pytest.fail("the pattern was read again"))
    gated = literal_gate.GatedPattern(pattern.pattern, pattern.flags)
    assert gated.search(" alphagamma", gate_text(" alphagamma")) is None
    assert gated.search(" betagamma", gate_text(" betagamma"))


def test_a_line_with_other_than_ascii_is_always_searched():
    # Case-insensitive matching folds 'ſ' (long s) onto 's'; lowering does not.
    literals = required_literals(r"(?i:\bsegmentation\b)")
    assert re.search(r"(?i:\bsegmentation\b)", "ſegmentation fault")
    assert gate_text("ſegmentation fault") is None
    assert may_match(literals, gate_text("ſegmentation fault"))
    assert not may_match(literals, gate_text("Received request cmpl-3f9a-0"))


def _real_lines() -> list[str]:
    paths = sorted((ROOT / "logs_samples" / "real" / "logs").iterdir())[::3]
    paths += sorted((ROOT / "logs_samples").glob("*.log")) + sorted((ROOT / "kb").rglob("*.yaml"))
    lines = {line for path in paths for line in path.read_text(encoding="utf-8", errors="replace").splitlines()}
    return sorted(lines)


def _context_of(line: str) -> JobContext:
    context = JobContext()
    context.observe(line)
    return context


def test_the_gate_changes_no_verdict_on_real_lines(monkeypatch):
    lines = _real_lines()
    gated = [(error_lines.error_kind(line), confirm.error_context(line), _context_of(line)) for line in lines]
    monkeypatch.setattr(literal_gate, "may_match", lambda literals, text: True)
    searched = [(error_lines.error_kind(line), confirm.error_context(line), _context_of(line)) for line in lines]
    assert len(lines) > 10_000
    assert gated == searched
    assert literal_gate.MIN_LENGTH >= 2  # a one-character string would pass nearly every line
