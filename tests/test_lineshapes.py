"""The native shape table: its API, and a scan through it finding what the pure-Python path finds."""

from __future__ import annotations

import os
import random

import pytest

from triage.engine.lines import NO_NATIVE, PrefilterLines

NATIVE_OFF = os.environ.get(NO_NATIVE, "0") not in ("", "0")


def test_the_native_table_is_used_unless_turned_off(engine_kb, prefilter):
    from triage.engine import Scanner

    finder = Scanner(engine_kb, prefilter=prefilter)._finder
    if NATIVE_OFF:
        assert isinstance(finder, PrefilterLines)
    else:
        from triage.engine.native_lines import NativeLines

        assert isinstance(finder, NativeLines), "triage/engine/_lineshapes.c is not built: scripts/build_native.py"


@pytest.fixture
def native():
    if NATIVE_OFF:
        pytest.skip(f"{NO_NATIVE} is set")
    from triage.engine import _lineshapes

    return _lineshapes


def ids(found):
    return [shape for _, _, _, shape in found]


def test_repeats_within_a_call_point_at_their_shapes_first_line(native):
    table = native.Shapes()
    block = b"step 1 ok\nstep 7 ok\nstep 12 ok\nstep 3 ok\n"
    found = table.classify(block, 0, len(block))
    assert [(start, end, index) for start, end, index, _ in found] == [(0, 9, 0), (10, 19, 1), (20, 30, 2), (31, 40, 3)]
    # Digits are masked one by one: `12` is another shape than `7`.
    assert ids(found) == [-1, -2, -1, -2]


def test_quiet_shapes_are_skipped_and_active_ones_come_back_with_their_id(native):
    table = native.Shapes()
    assert table.register(b"step 0 ok", native.QUIET) == 0
    assert table.register(b"loss 0.0", native.ACTIVE) == 1
    block = b"step 4 ok\nloss 2.5\nstep 9 ok\nnew line\n"
    assert [(start, index, shape) for start, _, index, shape in table.classify(block, 0, len(block))] == [
        (10, 1, 1),
        (29, 3, -1),
    ]
    assert table.classify(block, 10, 19) == [(10, 18, 0, 1)]  # a range of the buffer, indexed from its start


def test_cause_lines_are_held_and_given_back_only_within_their_groups_reach(native):
    table = native.Shapes()
    table.register(b"cause a", native.CAUSE, 0)
    table.register(b"cause b", native.CAUSE, 1)
    block = b"cause a\nother\ncause b\ncause a\n"
    assert ids(table.classify(block, 0, len(block))) == [-1]
    assert [index for _, _, index, _ in table.held([[(0, 100)], []], 100, 0)] == [0, 3]
    assert [index for _, _, index, _ in table.held([[(1, 3)], [(2, 3)]], 100, 0)] == [2]
    assert table.held([], 0, 5) == []


def test_of_the_last_lines_out_of_reach_the_last_few_of_each_group_are_held(native):
    table = native.Shapes()
    table.register(b"cause a", native.CAUSE, 0)
    table.register(b"cause b", native.CAUSE, 1)
    block = b"cause a\n" * 6 + b"cause b\n" * 2 + b"cause a\n"
    assert table.classify(block, 0, len(block)) == []
    # Line 1 is in reach; from line 2 on, out of reach, the last 3 of each group are held.
    assert [index for _, _, index, _ in table.held([[(1, 2)], []], 2, 3)] == [1, 4, 5, 6, 7, 8]


def test_crlf_and_a_last_line_without_its_newline(native):
    table = native.Shapes()
    block = b"a 1\r\na 2\nend 5"
    found = table.classify(block, 0, len(block))
    assert [(start, end) for start, end, _, _ in found] == [(0, 4), (5, 8), (9, 14)]
    assert ids(found) == [-1, -1, -1] and table.lines == 3  # `a 1\r` is not `a 1`
    table.register(b"end 0", native.QUIET)
    assert len(table.classify(block, 0, len(block))) == 2


def test_long_lines_always_come_back_and_are_never_registered(native):
    table = native.Shapes(long_line=8)
    block = b"0123456789\n0123456789\nshort\n"
    assert ids(table.classify(block, 0, len(block))) == [-1, -1, -1]
    with pytest.raises(ValueError):
        table.register(b"0123456789", native.QUIET)


def test_the_table_starts_over_when_full(native):
    table = native.Shapes(limit=2)
    assert [table.register(line, native.QUIET) for line in (b"a", b"b")] == [0, 1]
    assert table.register(b"a", native.ACTIVE) == 0  # known: its id stays, its kind changes
    assert table.register(b"c", native.QUIET) == 0 and len(table) == 1  # full: forgotten, then c
    block = b"a\nb\nc\n"
    assert ids(table.classify(block, 0, len(block))) == [-1, -1]


def test_binary_junk_nul_bytes_and_bytes_that_look_like_digits(native):
    table = native.Shapes()
    lines = [b"\x00\x001", b"\x00\x002", b"\xb1x", b"\xb2x", b"\x011", b"\x021", b"\xff" * 20 + b"9"]
    found = table.classify(b"\n".join(lines) + b"\n", 0, sum(map(len, lines)) + len(lines))
    # Only ASCII digits are masked: \xb1 is not 1, nor \x01.
    assert ids(found) == [-1, -2, -1, -1, -1, -1, -1]


def test_many_distinct_lines_have_distinct_shapes(native):
    rng = random.Random(1)
    words = [bytes(rng.choice(b"abcdefghij") for _ in range(rng.randrange(1, 40))) for _ in range(20000)]
    unique = sorted(set(words))
    block = b"\n".join(unique) + b"\n"
    assert ids(native.Shapes().classify(block, 0, len(block))) == [-1] * len(unique)


def test_bad_arguments_are_refused(native):
    table = native.Shapes()
    with pytest.raises(ValueError):
        table.classify(b"abc\n", 2, 10)
    with pytest.raises(ValueError):
        table.register(b"x", 7)
    with pytest.raises(ValueError):
        native.Shapes(limit=0)


ID_LINES = [
    b"Received request cmpl-3f9a2b7c8d1e4f60a1b2c3d4e5f6a7b8-0: x=12",
    b"id chatcmpl-ecd16485-06a5-4e56-bbd5-7f9274b578db done",
    b"ecd16485-06a5-4e56-bbd5-7f9274b578db",
    b"SHA 9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08.",
    b"two 3f9a2b7c8d1e4f60a1b2 and 0123456789abcdef0123",
    b"HCCL error code 0x05000002 at 0x7f3a2c1b4d90, step 123",
    b"mixed 3f9a2b7c8d1e4f60A1B2c3d4e5f6a7b8 case",
    b"glued x3f9a2b7c8d1e4f60a1b2c3d4e5f6a7b8 and 3f9a2b7c8d1e4f60a1b2c3d4e5f6a7b8g",
    b"short 3f9a2b7c8d1e4f60a1b and ECD16485-06A5-4E56-BBD5-7F9274B578DB",
    "ü 3f9a2b7c8d1e4f60a1b2c3d4e5f6a7b8 ünicode".encode(),
]


@pytest.mark.parametrize("line", ID_LINES)
def test_the_table_reads_hex_ids_as_the_scanner_does(native, line):
    from triage.engine.normalize import masked_ids

    table = native.Shapes(limit=64)
    assert (table.register(line, native.QUIET, 0, True) >= 0) == (masked_ids(line) is not None)


def test_lines_that_differ_only_in_ids_from_a_masked_quiet_shape_are_skipped(native):
    table = native.Shapes(limit=64)
    first = b"Received request cmpl-3f9a2b7c8d1e4f60a1b2c3d4e5f6a7b8-0: x=12"
    assert table.register(first, native.QUIET, 0, True) == 0
    block = (
        b"Received request cmpl-00000000aaaaaaaabbbbbbbbcccccccc-0: x=98\n"  # another id: skipped
        b"Received request cmpl-00000000aaaaaaaabbbbbbbbcccccccc-0: x=100\n"  # one digit more: another shape
        b"Received request cmpl-3f9a2b7c8d1e4f60a1b2c3d4e5f6a7b8-0: y=12\n"  # other words
        b"Received request cmpl-3f9a2b7c8d1e4f60a1b2c3d4e5f6a7b8-0: x=12\n"  # its own line, not registered as it is
    )
    assert [index for _, _, index, _ in table.classify(block, 0, len(block))] == [1, 2]
    with pytest.raises(ValueError):
        table.register(first, native.ACTIVE, 0, True)


def test_new_lines_that_differ_only_in_ids_point_at_the_first_of_them(native):
    """Before any shape with ids masked is registered (a log's first block), lines that differ only in
    their ids are one new shape: the first is handed back to be matched, the others follow it."""
    table = native.Shapes(limit=64)
    block = (
        b"Finished request chatcmpl-a6a3a450-6513-270e-269e-0d37f2a74de4.\n"
        b"Finished request chatcmpl-0f88080b-10a3-d6b2-aa05-e11ab2715945.\n"
        b"Received request cmpl-3f9a2b7c8d1e4f60a1b2c3d4e5f6a7b8-0: x=12\n"
        b"Received request cmpl-00000000aaaaaaaabbbbbbbbcccccccc-0: x=98\n"
        b"Received request cmpl-00000000aaaaaaaabbbbbbbbcccccccc-0: x=100\n"  # one digit more: another shape
        b"Finished request chatcmpl-5d39d0a8-9a2e-f80f-58ee-8571f4998d7c.\n"
    )
    assert ids(table.classify(block, 0, len(block))) == [-1, -2, -1, -4, -1, -2]


def _random_id_line(rng: random.Random) -> bytes:
    """Words, numbers and hex runs of lengths around the id limits, in both cases and as UUIDs,
    glued or spaced, so that runs fall across the table's 16- and 64-byte strides and line ends."""

    def hex_run(size: int, digits: str) -> str:
        return "".join(rng.choice(digits) for _ in range(size))

    def uuid(digits: str) -> str:
        return "-".join(hex_run(size, digits) for size in (8, 4, 4, 4, 12))

    parts = []
    for _ in range(rng.randint(1, 12)):
        digits = rng.choice(["0123456789abcdef", "0123456789ABCDEF", "0123456789abcdefABCDEF", "0123456789"])
        parts.append(
            rng.choice(
                [
                    hex_run(rng.choice([7, 8, 19, 20, 21, 32, 40, 70]), digits),
                    uuid(digits),
                    uuid(digits)[: rng.randint(30, 35)],
                    rng.choice(["INFO", "cmpl-", "req=", "x", "g", "-", "_", "ü", "0x"]),
                    str(rng.randint(0, 10**6)),
                ]
            )
        )
        parts.append(rng.choice([" ", "", "-", ": ", "_", "/"]))
    return "".join(parts).encode()


def test_the_tables_masked_shapes_are_the_scanners_on_random_lines(native):
    """The C reader skips a line for a masked quiet one exactly when Python's masked shapes agree."""
    from triage.engine.normalize import masked_ids

    rng = random.Random(13)
    checked = 0
    for _ in range(400):
        first = _random_id_line(rng)
        table = native.Shapes(limit=64)
        registered = table.register(first, native.QUIET, 0, True) >= 0
        assert registered == (masked_ids(first) is not None), first
        if not registered:
            continue
        # The same words with other ids of the same kinds, and lines that differ elsewhere too.
        flipped = bytes(b ^ 1 if b in b"0123456789abcdeABCDE" and rng.random() < 0.5 else b for b in first)
        for other in (flipped, first + b" ", first[:-1], b"x" + first):
            skipped = table.classify(other + b"\n", 0, len(other) + 1) == []
            assert skipped == (masked_ids(other) == masked_ids(first)), (first, other)
            checked += 1
    assert checked > 400


def test_a_long_lines_carriage_return_pieces_come_back_once_a_shape_unless_quiet(native):
    table = native.Shapes(limit=64, long_line=32)
    assert table.register(b"bar 10%|###|", native.QUIET) == 0
    line = b"bar 10%|###|\rbar 20%|###|\rbar 30%|####|\r\rbar 40%|####|\rOOM at step 7\r" + b"x" * 40
    pieces = [line[start:end] for start, end in table.segments(line, 0, len(line))]
    # Quiet shapes and empty pieces are skipped, a shape's repeats too; a piece past long_line comes back.
    assert pieces == [b"bar 30%|####|", b"OOM at step 7", b"x" * 40]
    assert table.segments(line, 13, 26) == []  # a range of the line: `bar 20%|###|`, quiet
    with pytest.raises(ValueError):
        table.segments(line, 5, len(line) + 1)


CODED_LINES = [
    "[ERROR] RUNTIME({a},python):2026-11-28-02:17:{b} error code {c}.",
    'INFO:     10.0.{a}.31:{b} - "POST /v1/chat/completions HTTP/1.1" {c} OK',
    "retCode={a} x{b}y error code is {c}",
    "{a}{b}_{c}",
]


def test_the_tables_digit_groups_are_the_scanners_on_random_coded_lines(native, engine_kb, prefilter):
    """A line of a GROUPED shape is skipped for a quiet group exactly when Python's digit-group keys
    agree: bare codes whole, inside longer runs, cut short, at a run's start or end, or glued to words."""
    from triage.engine.digit_groups import DigitGroups

    groups: DigitGroups[object] = DigitGroups(engine_kb, prefilter)
    codes = groups.code_strings or ()
    assert codes
    rng = random.Random(17)

    def number(size: int) -> str:
        digits = "".join(rng.choice("0123456789") for _ in range(size))
        fitting = [code.decode() for code, _, _ in codes if len(code) <= size]
        if fitting and rng.random() < 0.5:
            code = rng.choice(fitting)
            at = rng.randint(0, size - len(code))
            digits = digits[:at] + code + digits[at + len(code) :]
        return digits

    checked = 0
    for template in CODED_LINES:
        for _ in range(60):
            sizes = [rng.randint(1, 8) for _ in range(3)]

            def line(template: str = template, sizes: list[int] = sizes) -> bytes:
                return template.format(**{slot: number(size) for slot, size in zip("abc", sizes)}).encode()

            first = line()
            runs = groups.runs(first)
            if runs is None:
                continue
            table = native.Shapes(limit=64)
            table.set_codes(codes)
            table.register(first, native.GROUPED, 0, False, *runs)
            table.register_group(first, native.QUIET)
            for other in (line() for _ in range(8)):
                skipped = table.classify(other + b"\n", 0, len(other) + 1) == []
                assert skipped == (groups.key(other) == groups.key(first)), (first, other)
                checked += 1
    assert checked > 1000
