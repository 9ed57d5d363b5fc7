"""The engine: decoding, templates, matching, evidence, ranking."""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Callable

import pytest

from triage.engine.normalize import clean_text, decode_line, template
from triage.engine.values import parse_value
from triage.results import replace

OOM = (
    "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.97 GiB total capacity; "
    "20.13 GiB already allocated; 20.13 GiB current active; 1.01 GiB free; 50.61 GiB reserved in total by PyTorch)"
)


def test_decode_falls_back_to_gbk_then_latin1():
    assert decode_line("错误: 内存不足".encode("gbk")) == "错误: 内存不足"
    assert decode_line(b"caf\xe9 \xff\xfe") == "café ÿþ"
    assert decode_line("ünïcode".encode()) == "ünïcode"


def test_clean_text_strips_ansi_and_crlf():
    assert clean_text("\x1b[31mERROR\x1b[0m boom\r\n") == "ERROR boom"
    assert clean_text("a\x00b\x07c") == "abc"


def test_template_masks_variable_parts():
    a = template("[rank3]: 2024-05-21 11:57:54,123 PID:927000 at 0x7f3a2b 10.0.0.12:29500 /usr/lib/x.so failed")
    b = template("[rank7]: 2024-06-01 01:02:03,999 PID:12 at 0xdeadbeef 192.168.1.1:1 /opt/y/z.so failed")
    assert a == b


def test_parse_sizes():
    assert parse_value("2.00 GiB", "size") == 2 * 1024**3
    assert parse_value("512 MiB", "size") == 512 * 1024**2
    assert parse_value("12", "int") == 12
    assert parse_value("x", "int") is None
    # Found by fuzzing: digits run together into a number no float holds (it raised OverflowError).
    assert parse_value("9" * 400 + " GiB", "size") is None
    assert parse_value("1e999", "float") is None
    assert parse_value("9" * 5000, "int") is None


def test_oom_fragmentation_is_the_likely_cause(scan_text):
    result = scan_text(OOM)
    top = result.diagnoses[0]
    assert top.id == "npu-out-of-memory"
    assert top.causes[0].id == "fragmentation"
    assert top.extracted["reserved_bytes"] > top.extracted["allocated_bytes"]
    assert top.evidence[0].line == 1


@pytest.mark.parametrize(
    ("line", "entry", "cause", "fix_word"),
    [
        # sgl-project/sgl-kernel-npu#185, as pasted: on sglang, where quantization settings are the usual
        # refusal, a kernel's own limit on the batch says which value is out of range
        (
            "[2025-11-14 14:01:31 TP0 EP0] Prefill batch, #new-seq: 31, #new-token: 4224, #cached-token: 0\n"
            "[ERROR][FusedDeepMoe] batchSize(bs) must <= 256.\n"
            "[ERROR][FusedDeepMoe] CheckData failed.\n"
            "[2025-11-14 14:01:31 TP4 EP4] Scheduler hit an exception: Traceback (most recent call last):",
            "family-aclnn-param-check-failed",
            "value-outside-kernel-range",
            "--chunked-prefill-size",
        ),
        # cann/hccl fault-diagnosis guide, EI0001 (as printed there): the variable is named, with what it takes
        (
            "[ERROR]HCCL(3729526,python3.11):2025-10-23-17:30:40.098.973 [externalinput.cc:963] "
            "[3729526][Parse][rdmaServerLevel]HCCL_RDMA_SL[1000] is invalid. except: [0, 7]",
            "family-hccl-comm-failure",
            "env-var-invalid",
            "HCCL_SOCKET_IFNAME",
        ),
        # the same guide, EI0004: the rank table's own path
        (
            "[ERROR] HCCL(1104629,test_one_side):2025-10-28-17:45:13.679.684 [param_check.cc:66] [1104629]"
            "[InitGroupStage][RanktableConfig]errNo[0x0000000005010001] path /ranktable.json is not a valid real path",
            "hccl-ranktable-invalid",
            "table-path-unreadable",
            "RANK_TABLE_FILE",
        ),
        # and EI0014: the table's device_ip against the NIC's
        (
            "[ERROR] HCCP(166192,eExecutor):2025-01-21-16:59:39.962.565 [ra_host.c:480]tid:167056,"
            "ra_rdev_init_check_ip(480) : [check][ip]fail, ret(129) the IP address(127.10.0.0) in the ranktable is "
            "inconsistent with the IP address(127.10.0.1) of the network adapter, please make sure they're consistent.",
            "hccl-ranktable-invalid",
            "device-ip-wrong",
            "hccn_tool",
        ),
    ],
)
def test_what_the_log_names_decides_the_cause_and_its_first_fix(scan_text, line, entry, cause, fix_word):
    top = scan_text(line + "\n").diagnoses[0]
    assert (top.id, top.causes[0].id) == (entry, cause)
    first = top.fixes[0]
    assert fix_word in " ".join([first.title, first.description or "", *first.commands])


def test_same_line_from_many_ranks_is_one_template(scan_text):
    lines = "\n".join(f"[rank{r}]: {OOM}" for r in range(8))
    result = scan_text(lines)
    assert result.stats.templates == 1
    assert result.diagnoses[0].evidence_count == 8


def test_fuzzy_matches_reworded_and_prefixed_lines(scan_text):
    reworded = "[rank2]: E1129 RuntimeError: NPU out of memry. Tried to alocate 3.1 GiB on device 2"
    result = scan_text(reworded)
    assert [d.id for d in result.diagnoses][:1] == ["npu-out-of-memory"]


def test_healthy_lines_do_not_fire(scan_text):
    healthy = "\n".join(
        f"2024-05-21 11:{i:02d}:00 INFO step {i} | loss 2.{i:02d} | lr 1e-4 | npu mem reserved 33.0 GiB"
        for i in range(60)
    )
    assert scan_text(healthy).diagnoses == []


def test_evidence_line_numbers_span_chunks(engine_kb, prefilter):
    from triage.engine import Scanner

    scanner = Scanner(engine_kb, prefilter=prefilter)
    data = ("ok line\n" * 1000 + OOM + "\n").encode()
    for start in range(0, len(data), 777):
        scanner.feed(data[start : start + 777], "big.log")
    scanner.finish("big.log")
    result = scanner.result()
    assert result.diagnoses[0].evidence[0].line == 1001
    assert result.stats.lines == 1001


def test_a_reader_that_rewinds_to_its_last_line_end_finds_what_one_feed_finds(engine_kb, prefilter):
    """`feed(data, end=n)` scans data[:n]; the reader gives data[n:] again. A read without a line
    end (a line longer than a read) is carried over as usual."""
    from triage.engine import Scanner

    data = ("ok line 1\n" * 300 + OOM + "\n" + "x" * 5000 + "\n" + "ok line 2\n" * 300 + OOM + "\n").encode()
    whole = Scanner(engine_kb, prefilter=prefilter)
    whole.feed(data, "a.log")
    whole.finish("a.log")
    rewound = Scanner(engine_kb, prefilter=prefilter)
    at = 0
    while at < len(data):
        chunk = data[at : at + 1000]
        end = chunk.rfind(b"\n") + 1 or len(chunk)
        rewound.feed(chunk, "a.log", end=end)
        at += end
    rewound.finish("a.log")
    one, other = whole.result(), rewound.result()
    assert one.diagnoses and one.diagnoses == other.diagnoses
    assert (one.stats.lines, one.stats.bytes) == (other.stats.lines, other.stats.bytes) == (603, len(data))


def test_python_prefilter_gives_the_same_results(engine_kb):
    from triage.engine import Scanner
    from triage.engine.prefilter import PythonPrefilter

    text = "noise\n" * 50 + OOM + "\nmore noise\n"
    fast = Scanner(engine_kb)
    slow = Scanner(engine_kb, prefilter=PythonPrefilter(engine_kb))
    for scanner in (fast, slow):
        scanner.feed_text(text, "x.log")
    assert [replace(d, first_seen=0) for d in fast.result().diagnoses] == [
        replace(d, first_seen=0) for d in slow.result().diagnoses
    ]


@pytest.mark.parametrize(
    "prefix",
    [
        "",
        "[rank3]: ",
        "(VllmWorker rank=0 pid=12) ",
        "[1,3]<stderr>:",
        "May  1 10:11:12 node1 python[1234]: ",
        "2024-05-01T10:11:12.345678901Z stderr F ",
        # vLLM's logger: a worker, an error's level, the time and the file
        "(Worker_TP0 pid=12) ERROR 03-11 08:33:36 [multiproc_executor.py:863] ",
    ],
)
def test_a_signature_for_the_line_s_start_matches_after_a_launcher_s_prefix(engine_kb, prefix):
    # `^\s*Killed\s*$` is written for the shell's line; a rank, a container or journald prefixes it.
    from triage.engine import Scanner
    from triage.engine.prefilter import PythonPrefilter

    text = f"{prefix}step 3 loss 1.2\n{prefix}Killed\n"
    for scanner in (Scanner(engine_kb), Scanner(engine_kb, prefilter=PythonPrefilter(engine_kb))):
        scanner.feed_text(text, "x.log")
        assert scanner.result().diagnoses[0].id == "family-host-memory-exhausted"


def test_only_the_anchors_that_open_the_pattern_are_widened():
    from triage.engine.anchors import AFTER_PREFIX, after_prefix, unanchored

    assert unanchored(r"^a|^b|c") == "a|b|c"
    assert after_prefix(r"^\s*Killed$") == AFTER_PREFIX + r"\s*Killed$"
    assert unanchored(r"(?i)^killed") == "(?i)killed"
    # inside a group or a class, or escaped, `^` is the author's own
    for kept in (r"(?:^|\s)x", r"[^a]b", r"\^x", r"[]^]x", r"a^"):
        assert unanchored(kept) == kept == after_prefix(kept)


def test_a_level_below_an_error_s_is_part_of_the_message_not_a_prefix_to_read_past(engine_kb):
    # "compare failed" opening a line is a failed golden compare; at INFO it is a count of them
    import re

    from triage.engine.anchors import after_prefix

    widened = re.compile(after_prefix(r"^\W*compare failed\b"))
    assert widened.search("[rank1]: compare failed")
    assert widened.search("[ERROR] compare failed")
    assert widened.search("(Worker_TP0 pid=1) ERROR 03-11 08:33:36 [multiproc_executor.py:863] compare failed")
    assert not widened.search("INFO compare failed ops: 0")
    assert not widened.search("[W1208 11:52:44.736321 69197 ProcessGroup.cpp:96] compare failed")


def test_the_prefilter_names_each_line_once(prefilter):
    # A match whose last byte is its line's newline (a pattern ending in \s) is of that line: it used
    # to open the line again, which then went to the matcher twice, each time with part of its ids
    # (16 sample and corpus logs; counts doubled on the pure-Python path, confidences lowered on both).
    from tests.conftest import ROOT

    for path in sorted((ROOT / "logs_samples").rglob("*.log")):
        starts = [candidate[0] for candidate in prefilter.candidates(path.read_bytes())]
        assert len(starts) == len(set(starts)), path.name


def test_engine_never_imports_textual_or_torch():
    code = (
        "import sys, triage.engine, triage.scanning, triage.cli.scan_cmd, triage.cli.main;"
        "bad = [m for m in ('textual', 'torch') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_kb_cache_is_rebuilt_when_an_entry_changes(tmp_path, monkeypatch):
    import shutil

    from tests.conftest import ROOT
    from triage.engine import load_engine_kb

    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    user = tmp_path / "kb" / "npu_oom"
    shutil.copytree(ROOT / "kb" / "npu_oom", user)
    # The user's directory alone: what the cache keys on is the same, and the build takes a second, not five.
    kb, _ = load_engine_kb([str(tmp_path / "kb")], include_shipped=False)
    assert list((tmp_path / "cache").glob("kb-*.cache"))
    cached, _ = load_engine_kb([str(tmp_path / "kb")], include_shipped=False)
    assert [e.title for e in cached.entries] == [e.title for e in kb.entries]
    entry = user / "npu-out-of-memory.yaml"
    entry.write_text(entry.read_text().replace("title: NPU out of memory", "title: Changed OOM", 1))
    changed, _ = load_engine_kb([str(tmp_path / "kb")], include_shipped=False)
    assert any(e.title.startswith("Changed OOM") for e in changed.entries)


def test_parallel_scan_gives_the_same_result_as_one_core(tmp_path, engine_kb, prefilter, monkeypatch):
    import random

    from triage import parallel
    from triage.engine import Scanner
    from triage.scanning import scan_sources

    monkeypatch.setattr(parallel, "MIN_PART_BYTES", 64 << 10)
    # Reads that end inside lines: each worker rewinds to its last line end.
    monkeypatch.setattr(parallel, "CHUNK_SIZE", 4099)
    rng = random.Random(3)
    lines = []
    for number in range(40000):
        lines.append(f"[rank{number % 8}]: step {number} | loss {rng.random():.4f} | lr 1e-4")
        if number % 5000 == 17:
            lines.append(f"[rank{number % 8}]: {OOM.replace('2.00 GiB', f'{number % 7}.00 GiB')}")
        if number % 9000 == 3:
            lines.append("EI0002: The wait execution of the Notify register times out.")
    path = tmp_path / "big.log"
    path.write_text("\n".join(lines) + "\n")

    results = []
    for jobs in (1, 3):
        scanner = Scanner(engine_kb, prefilter=prefilter)
        assert scan_sources(scanner, [str(path)], jobs=jobs) == []
        results.append(scanner.result())
    one, many = results
    assert len(parallel.split_points(str(path), 3)) == 3
    assert one.diagnoses and one.diagnoses == many.diagnoses
    assert (one.stats.lines, one.stats.bytes) == (many.stats.lines, many.stats.bytes)
    # What the workers' fuzzy matchers judged is counted too (each judges the templates of its part).
    assert many.stats.templates >= one.stats.templates > 0


def test_a_worker_that_dies_costs_its_part_not_the_scan(tmp_path, engine_kb, prefilter, monkeypatch):
    import os
    import signal

    from triage import parallel
    from triage.engine import Scanner
    from triage.scanning import scan_sources

    monkeypatch.setattr(parallel, "MIN_PART_BYTES", 64 << 10)
    lines = [f"[rank0]: step {number} | loss 2.{number % 97:02d} | lr 1e-4" for number in range(30000)] + [OOM]
    path = tmp_path / "big.log"
    path.write_text("\n".join(lines) + "\n")
    scan_range = parallel._scan_range

    def dying(parent, path, start, stop, source, *read):  # type: ignore[no-untyped-def]
        if start == 0:  # in the first part's child
            os.kill(os.getpid(), signal.SIGKILL)
        return scan_range(parent, path, start, stop, source, *read)

    monkeypatch.setattr(parallel, "_scan_range", dying)
    scanner = Scanner(engine_kb, prefilter=prefilter)
    errors = scan_sources(scanner, [str(path)], jobs=3)
    assert len(errors) == 1 and "died (killed by signal 9); those lines were not scanned" in errors[0]
    result = scanner.result()
    # The later parts keep their line numbers: the dead part's lines are counted, not scanned.
    assert result.diagnoses[0].evidence[-1].line == len(lines)
    assert result.stats.lines == len(lines)


def test_a_part_no_process_can_be_started_for_is_scanned_in_the_parent(tmp_path, engine_kb, prefilter, monkeypatch):
    from triage import parallel
    from triage.engine import Scanner
    from triage.scanning import scan_sources

    monkeypatch.setattr(parallel, "MIN_PART_BYTES", 64 << 10)
    lines = [f"[rank0]: step {number} | loss 2.{number % 97:02d}" for number in range(30000)] + [OOM]
    path = tmp_path / "big.log"
    path.write_text("\n".join(lines) + "\n")
    results = []
    for jobs in (1, 3):
        scanner = Scanner(engine_kb, prefilter=prefilter)
        if jobs > 1:
            monkeypatch.setattr(parallel.os, "fork", _fork_refused)
        assert scan_sources(scanner, [str(path)], jobs=jobs) == []
        results.append(scanner.result())
    one, many = results
    assert one.diagnoses and one.diagnoses == many.diagnoses and one.stats.lines == many.stats.lines


def _fork_refused() -> int:
    raise BlockingIOError(11, "Resource temporarily unavailable")


def test_the_files_of_a_multi_rank_job_are_scanned_in_workers_with_the_same_result(
    tmp_path, engine_kb, prefilter, monkeypatch
):
    import gzip

    from triage import parallel
    from triage.engine import Scanner
    from triage.scanning import scan_sources

    monkeypatch.setattr(parallel, "MIN_PART_BYTES", 16 << 10)
    paths = []
    for rank in range(4):
        lines = [f"[rank{rank}]: step {n} | loss {n % 7 / 3:.4f}" for n in range(3000)]
        lines.insert(1000 + 300 * rank, f"[rank{rank}]: {OOM}")
        if rank == 2:
            lines.insert(2000, "EI0002: The wait execution of the Notify register times out.")
        path = tmp_path / f"rank_{rank}.log"
        path.write_text("\n".join(lines) + "\n")
        paths.append(str(path))
    packed = tmp_path / "rank_9.log.gz"  # read by the parent between the workers' files
    packed.write_bytes(gzip.compress(b"[rank9]: step 1 | loss 1.0\n"))
    paths.insert(2, str(packed))
    assert len(parallel.parallel_plan(paths, 3)) == 4

    results = []
    for jobs in (1, 3):
        scanner = Scanner(engine_kb, prefilter=prefilter)
        assert scan_sources(scanner, [*paths, str(tmp_path / "missing.log")], jobs=jobs) == [
            f"{tmp_path / 'missing.log'}: no such file"
        ]
        results.append(scanner.result())
    one, many = results
    assert one.diagnoses and one.diagnoses == many.diagnoses
    assert [(e.source, e.line) for e in one.diagnoses[0].evidence] == [
        (e.source, e.line) for e in many.diagnoses[0].evidence
    ]
    assert (one.stats.lines, one.stats.bytes) == (many.stats.lines, many.stats.bytes)


def test_a_message_wrapped_onto_the_next_line_still_matches(scan_text):
    wrapped = (
        "step 7 | loss 2.1\n"
        "[rank1]: RuntimeError: Two accelerators cannot be\n"
        "[rank1]:     used at the same time in PyTorch: npu and cuda\n"
        "step 8 | loss 2.0\n"
    )
    top = scan_text(wrapped).diagnoses[0]
    assert top.id == "two-accelerators-conflict"
    assert top.evidence[0].line == 2
    assert "cannot be used at the same time" in top.evidence[0].text


def test_a_colour_code_glued_to_a_message_hides_no_word_start(engine_kb):
    # `\x1b[31m` ends in a word character: `\bATC run failed` found no word start after it in the bytes
    # the prefilter reads. An unterminated title sequence ends at its line.
    from triage.engine import Scanner

    text = b"step 1\n\x1b]0;job\n\x1b[31mATC run failed, Please check the detail log\x1b[0m\nstep 2\n"
    scanner = Scanner(engine_kb)
    scanner.feed(text, "x.log")
    scanner.finish("x.log")
    result = scanner.result()
    top = result.diagnoses[0]
    assert top.id == "family-graph-build-failed"
    assert (top.evidence[0].line, top.evidence[0].text) == (3, "ATC run failed, Please check the detail log")
    assert (result.stats.lines, result.stats.bytes) == (4, len(text))


def test_a_wrapped_line_that_is_also_a_cause_s_evidence_is_still_joined(scan_text):
    # "Compile" is evidence of a slow rank's cause; the line still continues on the next one. Of the
    # KB's match examples wrapped at a space near their middle onto an indented line, 523 -> 612 of
    # 684 named their entry once such lines were joined too.
    top = scan_text("step 1\nRuntimeError: Compile graph\n    kernel_graph0 failed.\n").diagnoses[0]
    assert top.id == "family-graph-build-failed"


def test_a_message_a_terminal_cut_mid_word_still_matches(scan_text):
    # A hard wrap cuts where the line is full; the next line is not indented. Of the KB's match examples
    # cut mid-word at their middle, 323 of 675 named their entry read with a space at the cut, 502 glued.
    cut = (
        "step 7 | loss 2.1\nRuntimeError: Two accelerators cannot be used at the sa\nme time in PyTorch: npu and cuda\n"
    )
    top = scan_text(cut).diagnoses[0]
    assert top.id == "two-accelerators-conflict"
    assert "at the same time in PyTorch" in top.evidence[0].text


def _fires(tmp_path, regex: str) -> Callable[[str], bool]:
    """Whether a scan of a text fires the one entry of a KB of its own, whose signature is `regex`."""
    from kb_helpers import entry_data, write_entry

    from triage.engine import Scanner, load_engine_kb

    write_entry(tmp_path, entry_data("spans-a-join", signatures=[{"regex": regex, "weight": 3}]))
    kb, errors = load_engine_kb([str(tmp_path)], include_shipped=False)
    assert not errors

    def fired(text: str) -> bool:
        scanner = Scanner(kb)
        scanner.feed_text(text, "x.log")
        return any(d.id == "spans-a-join" for d in scanner.result().diagnoses)

    return fired


def test_a_line_that_opens_with_an_exception_continues_no_message(tmp_path):
    # Two errors in a row are two messages: joining every such pair cost a fuzzy match each.
    fired = _fires(tmp_path, "ZQX stage failed (?:RuntimeError: )?ZQX stage")
    assert fired("[rank1]: ValueError: ZQX stage failed\n[rank1]:     ZQX stage two\n")
    assert not fired("[rank1]: ValueError: ZQX stage failed\n[rank1]: RuntimeError: ZQX stage two\n")


def test_a_line_that_opens_with_a_date_and_time_continues_no_message(tmp_path):
    # A logger's record of its own, after its tags (torchtitan's "adjusting timeout for all ProcessGroups"
    # under torch's "Set timeout is now only supported ..." warning read as a rendezvous timeout).
    fired = _fires(tmp_path, "ZQX stage failed.{0,80}ZQX stage")
    assert fired("[rank1]: ZQX stage failed at\n[rank1]:   ZQX stage two\n")
    assert not fired("[rank1]: ZQX stage failed at\n[rank1]:[titan] 2026-01-28 11:15:20,982 - root - ZQX stage two\n")
    assert not fired("ZQX stage failed at\n2026-01-28T11:15:20 INFO ZQX stage two\n")
    # Python's warnings module echoes the warn call's source line under the warning: no continuation.
    assert not fired('x.py:1536: UserWarning: ZQX stage failed at\n  warnings.warn("ZQX stage two")\n')


def test_a_line_that_matches_alone_is_not_counted_again_through_its_predecessor(scan_text):
    text = "Traceback (most recent call last):\n" + OOM + "\n"
    top = scan_text(text).diagnoses[0]
    assert top.id == "npu-out-of-memory" and top.evidence_count == 1


def test_draft_ranks_below_a_curated_entry_on_the_same_line(tmp_path):
    from kb_helpers import entry_data, write_entry

    from triage.engine import Scanner, load_engine_kb

    line = "RuntimeError: ZQX shared synthetic failure"
    signature = [{"text": "ZQX shared synthetic failure", "weight": 3}]
    write_entry(tmp_path, entry_data("curated-one", signatures=signature))
    # The draft's own signature is stronger: only its status puts it second.
    write_entry(tmp_path, entry_data("draft-one", status="draft", signatures=[{**signature[0], "weight": 4}]))
    kb, errors = load_engine_kb([str(tmp_path)], include_shipped=False)
    assert not errors
    scanner = Scanner(kb)
    scanner.feed_text(line, "x.log")
    assert [d.id for d in scanner.result().diagnoses] == ["curated-one", "draft-one"]


def test_a_pattern_hyperscan_refuses_is_still_found(tmp_path):
    from triage.engine.compiled import compile_kb
    from triage.engine.prefilter import HyperscanPrefilter
    from triage.kb.loader import load_kb

    kb_dir = tmp_path / "kb" / "other"
    kb_dir.mkdir(parents=True)
    entry = (
        "id: huge-repeat\ntitle: t\ncategory: other\nseverity: error\nsummary: s\n"
        "signatures:\n  - regex: 'frobnicate xxzork|b{70000}'\n    weight: 2.0\n"
    )
    (kb_dir / "huge-repeat.yaml").write_text(entry)
    kb = compile_kb(load_kb([tmp_path / "kb"])[0])
    block = b"noise\nfrobnicate xxzork\nmore noise\n"
    # Hyperscan refuses an exact repeat this large (a bounded one it is given unbounded, see
    # triage.engine.repeats); the Python pass finds its line instead.
    assert HyperscanPrefilter(kb).candidates(block) == [(6, 23, None)]


def test_a_chunk_is_scanned_in_line_aligned_slices():
    from triage.engine.slices import line_slices

    data = b"aaaa\nbb\n" + b"c" * 30 + b"\nd\n"
    slices = list(line_slices(data, 0, len(data), size=8))
    assert slices[0] == (0, 8) and slices[-1][1] == len(data)
    assert all(data[stop - 1 : stop] == b"\n" for _, stop in slices)
    assert b"".join(data[a:b] for a, b in slices) == data
    assert (8, 39) in slices  # a line longer than a slice is one slice


@pytest.mark.parametrize("seed", range(5))
def test_each_piece_of_a_long_line_is_whole_in_exactly_one_window(seed):
    from triage.engine.slices import WINDOW_OVERLAP, long_line_windows

    rng = random.Random(seed)
    pieces = [b"p" * rng.choice([1, 30, 200, 700]) for _ in range(400)]
    line = b"\r".join(pieces) + b"x" * rng.choice([0, 5000])  # and a long stretch with no piece end
    windows = list(long_line_windows(line, size=2000))
    assert windows[0][0] == 0 and windows[-1][1] == len(line)
    assert all(end - start <= 2000 for start, end in windows)
    assert all(start <= previous_end for (_, previous_end), (start, _) in zip(windows, windows[1:]))
    # A window ends before a carriage return, and the next starts on it; else they overlap.
    for (_, end), (start, _) in zip(windows, windows[1:]):
        assert (start == end and line[end : end + 1] == b"\r") or start == end - WINDOW_OVERLAP
    at = 0
    for piece in pieces:
        if len(piece) <= 2000 - 2 * WINDOW_OVERLAP:
            assert sum(start <= at and at + len(piece) <= end for start, end in windows) == 1
        at += len(piece) + 1


def test_a_warm_scan_of_a_log_without_errors_imports_only_what_it_uses(tmp_path):
    # Every scan pays its imports: the fuzzy matcher, the cache writer's temp files and the cold
    # build's thread pool (50 ms together) wait until a line or a cold KB needs them.
    log = tmp_path / "train.log"
    log.write_text("".join(f"step {n} loss {2.5 - n / 1000:.4f} lr 1e-4 tokens/s 3{n}\n" for n in range(500)))
    code = (
        "import sys; from triage.cli.main import main; main(['scan', '--exit-zero', '--json', sys.argv[1]]);"
        "heavy = ('rapidfuzz', 'concurrent.futures', 'tempfile', 'yaml', 'pydantic');"
        "print('LOADED', [m for m in heavy if m in sys.modules])"
    )
    for _ in range(2):  # the first run may build the KB cache
        proc = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "LOADED []" in proc.stdout
