"""Multi-rank correlation: the first failing rank is the root, later HCCL timeouts are its cascade."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from rank_logs import RANKS, ROOT_RANK, TEST_KB, rank_log, write_rank_logs

from triage.engine.correlate import correlate
from triage.engine.job_ranks import rank_of_source
from triage.engine.timestamps import parse_time
from triage.results import Diagnosis, EvidenceLine, ScanResult, replace


@pytest.fixture(scope="module")
def kb():
    from triage.engine import load_engine_kb

    kb, errors = load_engine_kb([str(TEST_KB)], strict=True, include_shipped=False)
    assert not errors
    return kb


def scan(kb, sources: list[tuple[str, str]], **options) -> ScanResult:
    from triage.engine import Scanner

    scanner = Scanner(kb)
    for name, text in sources:
        scanner.feed_text(text, name)
    return scanner.result(**options)


def rank_sources(*, timestamps: bool = True, order: list[int] | None = None) -> list[tuple[str, str]]:
    return [(f"rank_{r}.log", rank_log(r, timestamps=timestamps)) for r in order or range(RANKS)]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("2024-05-21 11:57:54,123 ERROR x", datetime(2024, 5, 21, 11, 57, 54, 123000)),
        ("[ERROR] HCCL(1,python):2024-05-21-11:57:54.167.645 [a.cc:1]", datetime(2024, 5, 21, 11, 57, 54, 167645)),
        ("[2024-06-27 11:39:22,652] [rank1]: boom", datetime(2024, 6, 27, 11, 39, 22, 652000)),
        ("2024-05-21T11:57:54.5+08:00 boom", datetime(2024, 5, 21, 3, 57, 54, 500000)),
        ("2024/05/21 11:57:54 boom", datetime(2024, 5, 21, 11, 57, 54)),
        ("[W1129 16:40:44.396] ProcessGroup warning", datetime(2000, 11, 29, 16, 40, 44, 396000)),
    ],
)
def test_parse_time_reads_the_common_formats(line, expected):
    stamp = parse_time(line)
    assert stamp is not None and stamp.when == expected


@pytest.mark.parametrize(
    "line", ["no time here 11:57:54", "2024-13-45 11:57:54 not a date", "x" * 200 + " 2024-05-21 11:57:54"]
)
def test_parse_time_ignores_what_is_not_a_line_time(line):
    assert parse_time(line) is None


def test_oom_on_rank_5_is_root_and_timeouts_are_cascade(kb):
    result = scan(kb, rank_sources())
    top = result.diagnoses[0]
    assert (top.category, top.rank, top.role) == ("npu_oom", ROOT_RANK, "root")
    assert result.root_rank == ROOT_RANK
    comms = [d for d in result.diagnoses if d.category == "hccl_timeout"]
    assert comms and all(d.role == "cascade" and d.rank != ROOT_RANK for d in comms)
    assert top.evidence[0].timestamp == datetime(2024, 5, 21, 11, 27, 54, 120000)


def test_time_beats_arrival_order(kb):
    # Rank 5's file arrives last, yet its OOM was written first.
    result = scan(kb, rank_sources(order=[0, 1, 2, 3, 4, 6, 7, 5]))
    assert result.root_rank == ROOT_RANK and result.diagnoses[0].category == "npu_oom"


def test_without_times_arrival_order_decides(kb):
    as_tailed = scan(kb, rank_sources(timestamps=False, order=[5, 0, 1]))
    assert as_tailed.root_rank == ROOT_RANK and as_tailed.diagnoses[0].category == "npu_oom"
    # A communication failure with nothing before it is the root itself.
    comms_first = scan(kb, rank_sources(timestamps=False, order=[0, 5]))
    assert comms_first.root_rank == 0
    roles = [(d.category, d.role) for d in comms_first.diagnoses]
    assert ("hccl_timeout", "root") in roles and ("npu_oom", None) in roles


def test_top_is_cut_after_reranking(kb):
    result = scan(kb, rank_sources(), top=1)
    assert [d.category for d in result.diagnoses] == ["npu_oom"]


def test_no_rank_information_means_no_roles(kb):
    plain = rank_log(ROOT_RANK).replace(f"[rank{ROOT_RANK}]: ", "")
    result = scan(kb, [("train.log", plain)])
    assert result.root_rank is None and result.diagnoses[0].role is None
    assert result.diagnoses[0].evidence[0].timestamp is not None


def _diagnosis(id_: str, category: str, severity: str, first_seen: int, line: str, rank: int) -> Diagnosis:
    return Diagnosis(
        id=id_, category=category, title=id_, severity=severity, confidence=0.7, score=1.0, first_seen=first_seen,
        rank=rank, evidence=[EvidenceLine(source=f"rank_{rank}.log", line=1, text=line, rank=rank)],
    )  # fmt: skip


def test_a_warning_is_never_the_root_and_glog_times_borrow_the_year():
    result = correlate(
        ScanResult(
            diagnoses=[
                _diagnosis("comms", "hccl_timeout", "error", 1, "[2024-11-29 17:10:44,000] EI0002 ...", 0),
                _diagnosis("version", "env_version", "warning", 2, "[W1129 16:00:00.000] version mismatch", 1),
                _diagnosis("crash", "segfault", "critical", 3, "[E1129 16:40:44.396] Segmentation fault", 3),
            ]
        )
    )
    assert [(d.id, d.role) for d in result.diagnoses] == [("crash", "root"), ("version", None), ("comms", "cascade")]
    assert result.root_rank == 3
    assert result.diagnoses[0].evidence[0].timestamp is None  # a year-less time is not shown with a guessed year


def test_triage_scan_json_over_rank_files(tmp_path, capsys):
    from triage.cli.main import main

    paths = write_rank_logs(tmp_path)
    code = main(["scan", "--json", "--no-progress", "--kb", str(TEST_KB), *map(str, paths)])
    assert code == 1
    out = json.loads(capsys.readouterr().out)
    assert out["root_rank"] == ROOT_RANK
    first = out["diagnoses"][0]
    assert (first["category"], first["rank"], first["role"]) == ("npu_oom", ROOT_RANK, "root")
    assert first["evidence"][0]["timestamp"] == "2024-05-21T11:27:54.120000"
    assert {d["role"] for d in out["diagnoses"] if d["category"] == "hccl_timeout"} == {"cascade"}


def test_a_guessed_communication_failure_is_no_cascade():
    # A guess names a family, not a failure that happened: it neither follows the root nor reorders.
    guessed = replace(_diagnosis("guess", "hccl_timeout", "error", 2, "[2024-11-29 17:10:44,000] odd", 2), guess=True)
    result = correlate(
        ScanResult(
            diagnoses=[
                _diagnosis("family", "other", "error", 1, "[2024-11-29 17:10:45,000] late failure", 1),
                _diagnosis("early", "env_version", "error", 3, "[2024-11-29 17:10:40,000] first failure", 0),
                guessed,
            ]
        )
    )
    assert [(d.id, d.role) for d in result.diagnoses] == [("family", None), ("early", "root"), ("guess", None)]


def test_what_one_rank_reports_at_one_moment_is_one_failure_rooted_at_its_best_explanation():
    # A wrapper's line (the failed MoE dispatch call) comes before the detail it wraps (the window is too
    # small); both are communication failures of rank 0 at one moment, so neither is the other's cascade.
    wrapper = replace(_diagnosis("dispatch", "hccl_timeout", "error", 1, "call aclnnMoeDistributeDispatch failed", 0), score=0.6)  # fmt: skip
    detail = replace(_diagnosis("buffsize", "hccl_timeout", "error", 4, "HCCL_BUFFSIZE is too SMALL", 0), score=4.1)
    late = _diagnosis("timeout", "hccl_timeout", "error", 9, "[2024-11-29 17:40:44,000] EI0002 timeout", 3)
    result = correlate(ScanResult(diagnoses=[detail, wrapper, late]))
    assert [(d.id, d.role) for d in result.diagnoses] == [
        ("buffsize", "root"),
        ("dispatch", None),
        ("timeout", "cascade"),
    ]
    assert result.root_rank == 0


@pytest.mark.parametrize(
    ("name", "rank"),
    [
        ("rank_3.log", 3),
        ("logs/worker-12.log", 12),
        ("node2.out", 2),
        ("device_7/plog.log", None),  # the directory is not the file's name
        ("device_7.log", 7),
        ("setdevice-507033-visible-devices.log", None),  # an error code after another word
        ("worker-20240101.log", None),  # a date
    ],
)
def test_a_files_rank_is_a_word_of_its_name_with_a_ranks_few_digits(name, rank):
    assert rank_of_source(name) == rank
