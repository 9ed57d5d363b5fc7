"""A scan through the native shape table finds what the pure-Python path finds, however the log is cut."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from triage.engine.evidence import CAUSE_WINDOW, WAITING_LINES
from triage.engine.lines import NO_NATIVE
from tests.test_lineshapes import NATIVE_OFF

pytestmark = pytest.mark.skipif(NATIVE_OFF, reason=f"{NO_NATIVE} is set: nothing to compare")

OOM = (
    "RuntimeError: NPU out of memory. Tried to allocate {n}.00 GiB (NPU 0; 60.97 GiB total capacity; "
    "20.13 GiB already allocated; 20.13 GiB current active; 1.01 GiB free; 50.61 GiB reserved in total by PyTorch)"
)
EI0006 = "EI0006: [PID: {n}] Getting socket times out. Reason: Remote Rank did not send the data in time."
WARNING = "[W compiler_depend.ts:{n}] Warning: Device do not support double dtype now, dtype cast repalce with float."
# One shape, two entries: digits tell them apart, so their lines are matched one by one.
CODES = (
    "RuntimeError: ACL stream synchronize failed, error code:507015",
    "RuntimeError: ACL stream synchronize failed, error code:507018",
)


def mixed_log(lines: int, seed: int) -> bytes:
    rng = random.Random(seed)
    out = []
    for step in range(lines):
        rank = f"[rank{rng.randrange(8)}]: " if rng.random() < 0.7 else ""
        draw = rng.random()
        if draw < 0.25:
            out.append(WARNING.format(n=rng.randrange(900)))
        elif draw < 0.253:
            out.append(rank + EI0006.format(n=rng.randrange(10**6)))
        elif draw < 0.255:
            out.append(rank + OOM.format(n=rng.randrange(9)))
        elif draw < 0.257:
            out.append(rank + rng.choice(CODES))
        elif draw < 0.258:
            # Digits a pattern names (the code), digits only a bare code may be (the PID: now and
            # then a code itself), and digits none can read: lines grouped by the first two.
            pid = rng.choice(["507018", "507015", str(rng.randrange(10**5, 10**6))])
            code = rng.choice(["507015", "507018"])
            out.append(rank + f"[ERROR] RUNTIME({pid},python):2026-11-28-02:17:{step % 60:02d} error code {code}.")
        elif draw < 0.259:
            out.append(rank + "Running tokenizer on dataset")  # cause evidence of EI0006's slow-rank
        elif draw < 0.26:
            out += [
                rank + "RuntimeError: Two accelerators cannot be",
                rank + "    used at the same time in PyTorch: npu",
            ]
        elif draw < 0.261:
            out.append("x" * rng.randrange(17_000, 40_000) + " error code:507015")  # longer than a match window
        else:
            out.append(f"{rank}step {step} | loss {rng.random():.4f} | tokens/s={rng.randrange(10**6)}")
        if rng.random() < 0.01:
            out[-1] += "\r"
    return ("\n".join(out) + "\n").encode()


def scan(engine_kb, prefilter, monkeypatch, data: bytes, chunk: int, *, native: bool):
    from triage.engine import Scanner

    monkeypatch.setenv(NO_NATIVE, "0" if native else "1")
    scanner = Scanner(engine_kb, prefilter=prefilter)
    for start in range(0, len(data), chunk):
        scanner.feed(data[start : start + chunk], "x.log")
    scanner.finish("x.log")
    return scanner


def spy(monkeypatch, owner: object, name: str, note: Callable[..., object]) -> None:
    """Have `owner.name` note each call's arguments, then do what it did."""
    original = getattr(owner, name)

    def noted(*args, **kwargs):
        note(*args, **kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, noted)


def lines_of(block: bytes, lines: list[tuple[int, int, int, int]]) -> list[bytes]:
    return [block[start:end] for start, end, _, _ in lines]


def same(one, other) -> None:
    assert one.result().diagnoses == other.result().diagnoses
    assert evidence_of(one) == evidence_of(other)
    assert one.lines == other.lines


def evidence_of(scanner) -> dict:
    """Every entry's counts, first sighting, cause evidence (and which line each cause's listing
    holds) and listed lines (line, rank, text), shown or not."""
    return {
        entry: (
            e.count,
            e.first_seen,
            e.first_rank,
            e.cause_quality,
            e.extracted,
            [(seen.line, cause, index) for seen, cause, index in e.support],
            e.lines,
        )
        for entry, e in scanner.evidence.items()
    }


EZ1001 = (
    "EZ1001: [PID: {n}] self not implemented for DT_DOUBLE, should be in dtype support list [DT_FLOAT16,DT_FLOAT,]."
)
HOST_OOM = "OSError: [Errno 12] Cannot allocate memory"
DATALOADER = "INFO dataloader.py:412 prefetch queue {n}/32, worker {w} ready"


def noisy_log(lines: int, seed: int) -> bytes:
    """torch_npu warnings by the thousand (cause evidence of the DT_DOUBLE entries, no rank),
    data-loader chatter on every rank (cause evidence of a host OOM), and now and then an error
    of either on one rank: cause lines that count, wait, or come from another rank."""
    rng = random.Random(seed)
    out = []
    for step in range(lines):
        rank = f"[rank{rng.randrange(4)}]: "
        draw = rng.random()
        if draw < 0.3:
            out.append(WARNING.format(n=rng.randrange(40)))
        elif draw < 0.45:
            out.append(rank + DATALOADER.format(n=rng.randrange(32), w=rng.randrange(8)))
        elif draw < 0.4506:
            out.append(rank + EZ1001.format(n=rng.randrange(10**6)))
        elif draw < 0.4511:
            out.append(rank + HOST_OOM)
        else:
            out.append(f"{rank}step {step} | loss {rng.random():.4f}")
    return ("\n".join(out) + "\n").encode()


@pytest.mark.parametrize(("seed", "chunk"), [(4, 1 << 30), (5, 300_000), (6, 12_345)])
def test_cause_lines_held_by_the_table_count_as_in_the_pure_python_scan(engine_kb, prefilter, monkeypatch, seed, chunk):
    data = noisy_log(30_000, seed)
    native = scan(engine_kb, prefilter, monkeypatch, data, chunk, native=True)
    same(native, scan(engine_kb, prefilter, monkeypatch, data, chunk, native=False))
    # Both kinds of cause line counted somewhere (a line of each is listed), and waited elsewhere
    # (far from any error).
    assert sum(bool(e.support) for e in native.evidence.values()) >= 2


@pytest.mark.parametrize(("seed", "chunk"), [(1, 1 << 30), (2, 65_536), (3, 7_777)])
def test_native_and_pure_python_scans_agree(engine_kb, prefilter, monkeypatch, seed, chunk):
    data = mixed_log(12_000, seed)
    native = scan(engine_kb, prefilter, monkeypatch, data, chunk, native=True)
    same(native, scan(engine_kb, prefilter, monkeypatch, data, chunk, native=False))
    found = {d.id for d in native.result().diagnoses}
    assert {"aicore-exception-507015", "aicpu-exception-507018", "hccl-ei0006-socket-timeout"} <= found


@pytest.mark.parametrize(("seed", "chunk"), [(9, 1 << 30), (11, 40_000)])
def test_native_and_pure_python_scans_agree_on_glued_corpus_logs(engine_kb, prefilter, monkeypatch, seed, chunk):
    # Real lines of every kind, with a log where a match ends on a line's newline (the prefilter once
    # named such a line twice, and the two paths counted it differently).
    from tests.test_split_scans import CORPUS, _glued_log

    data = (CORPUS / "vllm-ascend-14628-free-memory-less-than-utilization.log").read_bytes() * 2
    data += _glued_log(random.Random(seed), 100_000)
    same(
        scan(engine_kb, prefilter, monkeypatch, data, chunk, native=True),
        scan(engine_kb, prefilter, monkeypatch, data, chunk, native=False),
    )


@pytest.mark.parametrize("chunk", [1 << 20, 997])
def test_cause_lines_that_wait_in_short_runs_count_for_a_later_lead(engine_kb, prefilter, monkeypatch, chunk):
    # Runs of three cause lines apart, each ended by a line the scan sees one by one (a new shape):
    # the lines of a run wait (those of the last run sighted only when a lead comes), and the window
    # keeps the last WAITING_LINES of them across the runs, as the pure-Python path does.
    cause = "[rank0]: Running tokenizer on dataset"
    lines = [f"step {n}" for n in range(3 * CAUSE_WINDOW)]
    for run in range(9):
        lines += [cause] * 3 + [f"[rank0]: note {'xyzw'[run % 4] * (run + 1)}"] + ["step x"] * 5
    lines += ["[rank0]: " + EI0006.format(n=1)] + [f"step {n}" for n in range(100)]
    data = ("\n".join(lines) + "\n").encode()
    native = scan(engine_kb, prefilter, monkeypatch, data, chunk, native=True)
    same(native, scan(engine_kb, prefilter, monkeypatch, data, chunk, native=False))
    entry = next(n for n, e in enumerate(engine_kb.entries) if e.id == "hccl-ei0006-socket-timeout")
    # Of the 27 that waited, the window kept the last 16: the first of those is the line the lead
    # counts first, and lists (the 12th cause line, the last of the fourth run).
    listed = [seen.line for seen, cause, _ in native.evidence[entry].support if cause == "slow-rank"]
    assert listed == [3 * CAUSE_WINDOW + 3 * 9 + 3] and 27 - WAITING_LINES == 11


def test_cause_lines_in_a_blocks_last_lines_still_count_for_the_next_blocks_lead(engine_kb, prefilter, monkeypatch):
    # Cause lines far from any lead, in a block's last lines: a lead in the next block can still
    # reach the last few per entry (those `CauseWindow` keeps waiting), as in the pure-Python path.
    cause = "[rank0]: Running tokenizer on dataset"
    lines = [cause] + [f"step {n}" for n in range(3 * CAUSE_WINDOW)] + [cause] * 40 + ["step x"] * 10
    lines += ["[rank0]: " + EI0006.format(n=1)] + [f"step {n}" for n in range(100)]
    data = ("\n".join(lines) + "\n").encode()
    # The first block registers the cause line's shape; the second holds its repeats in its last lines.
    cuts = [0, len(cause) + 1, data.index(b"[rank0]: EI0006"), len(data)]
    scanners = []
    for native in (True, False):
        monkeypatch.setenv(NO_NATIVE, "0" if native else "1")
        from triage.engine import Scanner

        scanner = Scanner(engine_kb, prefilter=prefilter)
        for start, end in zip(cuts, cuts[1:]):
            scanner.feed(data[start:end], "x.log")
        scanner.finish("x.log")
        scanners.append(scanner)
    same(*scanners)
    entry = next(n for n, e in enumerate(engine_kb.entries) if e.id == "hccl-ei0006-socket-timeout")
    # Of the 40 in the block's last lines, the window kept the last 16 for the lead: the first of
    # them is the line listed (not the lone one, far before).
    listed = [seen.line for seen, cause, _ in scanners[0].evidence[entry].support if cause == "slow-rank"]
    assert listed == [1 + 3 * CAUSE_WINDOW + 40 - WAITING_LINES + 1]


@pytest.mark.parametrize("chunk", [1 << 20, 1013])
def test_repeats_of_a_counted_cause_line_do_not_push_other_causes_lines_out(engine_kb, prefilter, monkeypatch, chunk):
    # A cause counted once (the tokenizer line beside the first EI0006) gains nothing from its
    # repeats: they neither count nor wait, so a line of another cause, far from any lead, still
    # waits for the next EI0006 after twenty of them (it used to be pushed out of the window).
    tokenizer, refused = (
        "[rank0]: Running tokenizer on dataset",
        "[rank0]: connect to 10.0.0.2:60000 failed: Connection refused",
    )
    lead = "[rank0]: " + EI0006.format(n=1)
    lines = [lead, tokenizer] + [f"step {n}" for n in range(CAUSE_WINDOW + 500)]
    lines += [refused] + [tokenizer] * (WAITING_LINES + 4) + [lead] + [f"step {n}" for n in range(10)]
    data = ("\n".join(lines) + "\n").encode()
    native = scan(engine_kb, prefilter, monkeypatch, data, chunk, native=True)
    same(native, scan(engine_kb, prefilter, monkeypatch, data, chunk, native=False))
    entry = next(n for n, e in enumerate(engine_kb.entries) if e.id == "hccl-ei0006-socket-timeout")
    listed = {cause: seen.line for seen, cause, _ in native.evidence[entry].support}
    assert listed == {"slow-rank": 2, "network-or-firewall": 3 + CAUSE_WINDOW + 500}


def progress_log(seed: int) -> bytes:
    """Training chatter with progress bars redrawn in place: lines of thousands of carriage-return
    pieces (past a match window, and past the scanner's cut for overlong lines), an error or a
    cause line among the pieces now and then."""
    rng = random.Random(seed)
    out = []
    for step in range(400):
        if rng.random() < 0.05:
            pieces = [
                f"train: {n % 100:3d}%|{'#' * (n % 40):40}| {n}/99999 [00:{n % 60:02d}<01:00]"
                for n in range(rng.randrange(300, 15_000))
            ]
            for _ in range(rng.randrange(3)):
                where = rng.randrange(len(pieces))
                pieces[where] = rng.choice(
                    [OOM.format(n=where % 9), "Running tokenizer on dataset", EI0006.format(n=where)]
                )
            out.append("\r".join(pieces))
        else:
            out.append(f"step {step} | loss {rng.random():.4f}")
    return ("\n".join(out) + "\n").encode()


@pytest.mark.parametrize(("seed", "chunk"), [(7, 1 << 30), (8, 100_000), (9, 1 << 20)])
def test_progress_bars_in_long_lines_scan_as_in_the_pure_python_scan(engine_kb, prefilter, monkeypatch, seed, chunk):
    data = progress_log(seed)
    native = scan(engine_kb, prefilter, monkeypatch, data, chunk, native=True)
    same(native, scan(engine_kb, prefilter, monkeypatch, data, chunk, native=False))
    assert "npu-out-of-memory" in {d.id for d in native.result().diagnoses}


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("before", [16, 20, 25, 30, 34])
def test_a_message_in_a_progress_bar_is_read_whole_where_a_read_ends(engine_kb, prefilter, monkeypatch, native, before):
    # An overlong line is matched a read at a time (1 MiB): a message that a read's end falls inside
    # (`before` bytes of it in that read) was matched as two pieces, neither of them the error.
    from triage.engine.scanner import MAX_LINE

    bar = "\r".join(f"train: {n % 100:3d}%|{'#' * (n % 40):40}| {n}/99999" for n in range(30_000)).encode()
    message = ("\r" + OOM.format(n=2)).encode()
    at = MAX_LINE - before
    data = bar[:at] + message + bar[at:] + b"\n"
    result = scan(engine_kb, prefilter, monkeypatch, data, MAX_LINE, native=native).result()
    assert result.diagnoses[0].id == "npu-out-of-memory"


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("before", [400, 200, 20])
def test_a_message_in_a_progress_bar_is_counted_once_where_a_match_window_ends(
    engine_kb, prefilter, monkeypatch, native, before
):
    # A long line is matched a window at a time; windows overlapped by 512 bytes, so a message in
    # the overlap was counted (and listed) twice.
    from triage.engine.shapes import MATCH_WINDOW

    bar = "\r".join(f"train: {n % 100:3d}%|{'#' * (n % 40):40}| {n}/99999" for n in range(3000))
    at = bar.find("\r", MATCH_WINDOW - before)
    data = (bar[:at] + "\r" + OOM.format(n=2) + bar[at:] + "\n").encode()
    oom = next(d for d in scan(engine_kb, prefilter, monkeypatch, data, 1 << 20, native=native).result().diagnoses)
    assert (oom.id, oom.evidence_count, len(oom.evidence)) == ("npu-out-of-memory", 1, 1)


def test_repeats_of_a_shape_count_with_their_own_lines_and_ranks(scan_text):
    lines = [f"[rank{n % 8}]: " + EI0006.format(n=1000 + n) for n in range(3000)]
    result = scan_text("\n".join(lines) + "\n")
    diagnosis = next(d for d in result.diagnoses if d.id == "hccl-ei0006-socket-timeout")
    assert diagnosis.evidence_count == 3000
    assert (diagnosis.evidence[0].line, diagnosis.evidence[-1].line) == (1, 3000)
    assert (diagnosis.evidence[0].rank, diagnosis.evidence[-1].rank) == (0, 2999 % 8)
    assert diagnosis.first_seen == 1


def test_a_blocks_new_quiet_shapes_are_registered_before_it_is_walked(engine_kb, prefilter, monkeypatch):
    from triage.engine.native_lines import NativeLines

    # One block of chatter whose shapes are new: their repeats are skipped in C, not handed back.
    early: list[int] = []
    spy(monkeypatch, NativeLines, "_quiet_first", lambda *_: early.append(1))
    data = mixed_log(12_000, 7)
    native = scan(engine_kb, prefilter, monkeypatch, data, 1 << 30, native=True)
    assert early
    same(native, scan(engine_kb, prefilter, monkeypatch, data, 1 << 30, native=False))


REQUEST = "INFO 05-12 10:{m:02d}:{s:02d} [logger.py:43] Received request cmpl-{rid}-0: params: max_tokens={n}"
FAILED_REQUEST = "ERROR 05-12 10:00:{s:02d} [engine.py:331] Request chatcmpl-{uuid} failed: " + OOM


def request_log(lines: int, seed: int) -> bytes:
    """A serving log whose request ids make every line a shape of its own (see `hex_ids`)."""
    rng = random.Random(seed)
    out = []
    for step in range(lines):
        rid = f"{rng.getrandbits(128):032x}"
        if rng.random() < 0.003:
            uuid = f"{rid[:8]}-{rid[8:12]}-{rid[12:16]}-{rid[16:20]}-{rid[20:]}"
            out.append(FAILED_REQUEST.format(s=step % 60, uuid=uuid, n=rng.randrange(9)))
        else:
            out.append(REQUEST.format(m=step % 60, s=rng.randrange(60), rid=rid, n=rng.randrange(2000)))
    return ("\n".join(out) + "\n").encode()


@pytest.mark.parametrize("chunk", [1 << 20, 4099])
def test_lines_that_differ_in_hex_ids_need_matching_once(engine_kb, prefilter, monkeypatch, chunk):
    data = request_log(4000, seed=5)
    native = scan(engine_kb, prefilter, monkeypatch, data, chunk, native=True)
    same(native, scan(engine_kb, prefilter, monkeypatch, data, chunk, native=False))
    failed = data.count(b" failed: RuntimeError: NPU out of memory")
    assert failed > 3
    oom = {d.id: d for d in native.result().diagnoses}["npu-out-of-memory"]
    assert oom.evidence_count == failed
    # Matched once per shape with the ids masked, in whatever block it comes: not once per request.
    from triage.engine.normalize import shape_key

    shapes = {shape_key(line) for line in data.splitlines() if b" failed: RuntimeError" in line}
    assert native.candidate_lines == len(shapes) < failed


def test_a_shape_whose_ids_vary_in_length_reads_each_lines_rank(scan_text):
    lines = [
        f"[req {'ab' * width}] [rank{rank}]: RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB"
        for width, rank in ((10, 3), (14, 5), (12, 7))
    ]
    oom = {d.id: d for d in scan_text("\n".join(lines) + "\n").diagnoses}["npu-out-of-memory"]
    assert oom.evidence_count == 3
    assert [line.rank for line in oom.evidence] == [3, 7]  # the first and the last, of one shape


def test_a_request_line_that_needs_nothing_is_matched_once(engine_kb, prefilter, monkeypatch):
    from triage.engine import native_lines

    matched: list[bytes] = []
    spy(
        monkeypatch, native_lines, "match_packed", lambda _, __, block, new, **___: matched.extend(lines_of(block, new))
    )
    data = request_log(4000, seed=5)
    scan(engine_kb, prefilter, monkeypatch, data, 1 << 20, native=True)
    from triage.engine.normalize import masked_ids

    requests = [line for line in matched if b"Received request" in line]
    shapes = {masked_ids(line) for line in data.splitlines() if b"Received request" in line}
    assert len(requests) == len(shapes) == 4  # of 3,988 in one block (max_tokens has 1-4 digits)
    assert len(matched) - len(requests) == data.count(b" failed: RuntimeError")  # each error line is matched


def test_a_hex_id_is_masked_but_codes_and_addresses_are_not():
    from triage.engine.normalize import masked_ids

    assert masked_ids(b"Received request cmpl-3f9a2b7c8d1e4f60a1b2c3d4e5f6a7b8-0: x=12") == (
        b"Received request cmpl-<id>-0: x=00"
    )
    assert masked_ids(b"id chatcmpl-ecd16485-06a5-4e56-bbd5-7f9274b578db done") == b"id chatcmpl-<id> done"
    assert masked_ids(b"SHA 9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08") == b"SHA <id>"
    assert masked_ids(b"HCCL error code 0x05000002 at 0x7f3a2c1b4d90, step 123") is None
    assert masked_ids(b"mixed 3f9a2b7c8d1e4f60A1B2c3d4e5f6a7b8") is None  # not one case: not an id


ACCESS = 'INFO:     10.0.{w}.{q}:{port} - "POST /v1/chat/completions HTTP/1.1" {status} OK'


def access_log(lines: int, seed: int) -> bytes:
    """uvicorn's access lines: their status is a digit a pattern names (the serving-route entry's 404)
    and their port may be a bare code (507015); the rest of their digits no pattern reads."""
    rng = random.Random(seed)
    out = []
    for _ in range(lines):
        port = rng.choice(["507015", "65504", str(rng.randrange(1000, 999999))])
        status = rng.choice(["200"] * 30 + ["404"])
        out.append(ACCESS.format(w=rng.randrange(8), q=rng.randrange(32), port=port, status=status))
    return ("\n".join(out) + "\n").encode()


@pytest.mark.parametrize("chunk", [1 << 20, 7919])
def test_lines_told_apart_by_digits_are_grouped_in_the_table(engine_kb, prefilter, monkeypatch, chunk):
    from triage.engine.native_lines import NativeLines

    apart: list[tuple[int, int, int, int]] = []
    spy(monkeypatch, NativeLines, "_match_apart", lambda _, __, lines, *___: apart.extend(lines))
    data = access_log(6000, seed=11)
    native = scan(engine_kb, prefilter, monkeypatch, data, chunk, native=True)
    same(native, scan(engine_kb, prefilter, monkeypatch, data, chunk, native=False))
    assert {d.id for d in native.result().diagnoses} >= {"family-serving-route-not-found"}
    if chunk < len(data):
        # Once a block has taught the table a group that needs nothing, its lines stay there.
        assert len(apart) < 6000 // 2


def test_the_lines_of_a_group_that_needs_something_are_read_apart_once(engine_kb, prefilter, monkeypatch):
    from triage.engine.native_lines import NativeLines

    read: list[bytes] = []
    spy(monkeypatch, NativeLines, "_match_apart", lambda _, block, lines, *__: read.extend(lines_of(block, lines)))
    data = access_log(6000, seed=11)
    native = scan(engine_kb, prefilter, monkeypatch, data, 7919, native=True)
    same(native, scan(engine_kb, prefilter, monkeypatch, data, 7919, native=False))
    not_found = data.count(b'" 404 OK')
    # The 404 lines match the route entry; once a block has registered their group with the table it
    # hands them back by the group's id, and their digits are not read again.
    assert not_found > 150 and sum(b'" 404 OK' in line for line in read) < 20


def test_an_error_among_a_progress_bars_pieces_is_shown_as_its_own_line(scan_text):
    bar = "\r".join(f"train: {n % 100:3d}%|{'#' * (n % 40):40}| {n}/99999" for n in range(2000))
    result = scan_text(bar + "\r" + OOM.format(n=2) + "\r" + bar + "\n")
    oom = next(d for d in result.diagnoses if d.id == "npu-out-of-memory")
    assert oom.evidence[0].line == 1 and oom.evidence[0].text.startswith("RuntimeError: NPU out of memory.")


def test_a_request_id_names_no_chip(engine_kb, prefilter, monkeypatch):
    # A UUID's group `910b` reads as a chip's name between its dashes; the id is masked before it is read.
    data = b"".join(
        b"INFO 11-28 13:12:%02d [engine.py:331] Finished request chatcmpl-c8c567e9-6516-be9c-910b-%012x.\n"
        % (n % 60, n)
        for n in range(50)
    )
    for native in (True, False):
        context = scan(engine_kb, prefilter, monkeypatch, data, 4099, native=native).context
        assert context.soc is None, native


def windows_of(scanner) -> dict:
    """Each entry's cause window: its latest own line per source and rank, and the cause lines that
    wait (with those that wait unsighted sighted first, see `Counts._wait_later`)."""
    counts = scanner._counts
    for entry, source in list(counts._later):
        counts._wait_now(entry, source)
    return {
        entry: (
            window._primary,
            {
                source: [(seen.line, support) for seen, (support, _) in lines]
                for source, lines in window._waiting.items()
            },
        )
        for entry, window in counts._windows.items()
    }


FALLBACK = (
    "[W compiler_depend.ts:51] Warning: CAUTION: The operator 'aten::{op}' is not currently supported on the NPU "
    "backend and will fall back to run on the CPU. This may have performance implications."
)
# Ten shapes of one entry's own line (two entries' for bmm), more than a tally holds at once.
FALLBACK_OPS = ("bmm", "isin", "_unique2", "linalg_qr", "linalg_svd", "special_erfcx", "nms", "roll", "cumsum", "sort")
INTEGER_BMM = "[rank{r}]: batch = torch.zeros(4, 8, dtype=torch.int64)"
"""Cause evidence of the bmm fallback's integer-operands cause: it ends a tally of bmm's lines."""
TOKENIZER = "[rank{r}]: Running tokenizer on dataset"
"""Cause evidence of an entry that no fallback line is an own line of: a tally goes past it."""


def fallback_log(lines: int, seed: int) -> bytes:
    """A CPU-fallback warning printed every step on every rank (of up to 40, and with no rank now and
    then), in ten shapes, among cause lines of its own entry and of another, an EI0006 now and then,
    error codes told apart by their digits (lines that are also cause evidence of entries that
    never fire), and stretches of chatter longer than a cause's window."""
    rng = random.Random(seed)
    out = []
    ranks = 4
    for step in range(lines):
        if step % 5000 == 0:
            ranks = rng.choice((2, 8, 40))
        prefix = f"[rank{rng.randrange(ranks)}]: " if rng.random() < 0.9 else ""
        draw = rng.random()
        if draw < 0.3:
            out.append(prefix + FALLBACK.format(op=rng.choice(FALLBACK_OPS[: rng.choice((1, 3, 10))])))
        elif draw < 0.31:
            out.append(INTEGER_BMM.format(r=rng.randrange(ranks)))
        elif draw < 0.32:
            out.append(TOKENIZER.format(r=rng.randrange(ranks)))
        elif draw < 0.3205:
            out.append(prefix + EI0006.format(n=rng.randrange(10**6)))
        elif draw < 0.34:
            out.append(prefix + rng.choice(CODES))  # two digit groups of one shape, cause evidence of others
        elif step % 7000 < 2500:
            out.append(f"step {step} | loss {rng.random():.4f}")  # chatter only: windows close
        else:
            out.append(f"{prefix}step {step} | loss {rng.random():.4f}")
    return ("\n".join(out) + "\n").encode()


@pytest.mark.parametrize(("seed", "chunk"), [(21, 1 << 30), (22, 65_536), (23, 4_999)])
def test_own_lines_counted_in_tallies_count_as_in_the_pure_python_scan(engine_kb, prefilter, monkeypatch, seed, chunk):
    from triage.engine.counts import Counts
    from triage.engine.native_lines import NativeLines

    runs: list[int] = []
    spy(monkeypatch, Counts, "run", lambda _, __, count, *___: runs.append(count))
    data = fallback_log(40_000, seed)
    native = scan(engine_kb, prefilter, monkeypatch, data, chunk, native=True)
    same(native, scan(engine_kb, prefilter, monkeypatch, data, chunk, native=False))
    tallied = len(runs)
    monkeypatch.setattr(NativeLines, "_tally", lambda *_, **__: False)
    one_by_one = scan(engine_kb, prefilter, monkeypatch, data, chunk, native=True)
    assert len(runs) == tallied
    same(native, one_by_one)
    # Where each entry's causes may still count, and which cause lines wait: as after a count line by line.
    assert windows_of(native) == windows_of(one_by_one)
    found = {d.id: d for d in native.result().diagnoses}
    warnings = data.count(b"will fall back to run on the CPU")
    assert found["npu-cpu-fallback-warning"].evidence_count == warnings
    # The table counted most of them, several lines at a time (the rest: the lines of each shape's
    # first block, those a read cut, and those whose cause evidence or digits need them read).
    assert sum(runs) > warnings / 3 and sum(runs) > 4 * len(runs)
    # The integer-operands cause line counted near a bmm warning of its rank.
    assert any(cause.id == "integer-operands" and cause.evidence for cause in found["bmm-cpu-fallback"].causes)


def test_a_tally_reaches_a_waiting_cause_line_at_the_first_own_line_of_its_rank(engine_kb, prefilter, monkeypatch):
    # The integer-operands line of rank 5 waits (no bmm warning of its rank is near before it); the
    # next warnings, tallied by the table, are of rank 0 and then 5: the first of rank 5 reaches it,
    # and it counts though no warning of its rank follows in its window.
    warning = "[rank{r}]: " + FALLBACK.format(op="bmm")
    chatter = [f"[rank0]: step {n} | loss 0.{n}" for n in range(3 * CAUSE_WINDOW)]
    first = [warning.format(r=r) for r in (0, 5) * 20] + chatter[:10]
    rest = chatter + [INTEGER_BMM.format(r=5)] + [warning.format(r=r) for r in (0, 0, 0, 5, 5)] + chatter
    cut = len("\n".join(first)) + 1
    data = ("\n".join(first + rest) + "\n").encode()
    scanners = []
    for native in (True, False):
        monkeypatch.setenv(NO_NATIVE, "0" if native else "1")
        from triage.engine import Scanner

        scanner = Scanner(engine_kb, prefilter=prefilter)
        scanner.feed(data[:cut], "x.log")
        scanner.feed(data[cut:], "x.log")
        scanner.finish("x.log")
        scanners.append(scanner)
    same(*scanners)
    bmm = next(d for d in scanners[0].result().diagnoses if d.id == "bmm-cpu-fallback")
    line = len(first) + len(chatter) + 1
    assert [(e.line, e.supports) for e in bmm.evidence if e.supports] == [(line, "integer-operands")]


def test_the_native_table_reads_ranks_as_long_as_the_python_path() -> None:
    from triage.engine import _lineshapes
    from triage.engine.tallies import MAX_RANK_DIGITS

    assert _lineshapes.MAX_RANK_DIGITS == MAX_RANK_DIGITS
