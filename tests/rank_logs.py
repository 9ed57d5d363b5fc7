"""Logs of an 8-rank job in which rank 5 runs out of memory and the other seven time out after it."""

from __future__ import annotations

from pathlib import Path

TEST_KB = Path(__file__).resolve().parent / "fixtures" / "kb"
ROOT_RANK = 5
RANKS = 8

OOM = (
    "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 5; 60.97 GiB total capacity; "
    "57.13 GiB already allocated; 57.13 GiB current active; 1.01 GiB free; 58.61 GiB reserved in total by PyTorch)"
)
NOTIFY_TIMEOUT = (
    "EI0002: The wait execution of the Notify register times out. Reason: The Notify register has not "
    "received the Notify record from remote rank [5]."
)
DIST_FAILED = "RuntimeError: ERR02200 DIST call hccl api failed."


def rank_log(rank: int, *, timestamps: bool = True) -> str:
    """One rank's log; the OOM at 11:27:54, the timeouts 30 minutes later (HCCL_EXEC_TIMEOUT=1800)."""

    def stamp(clock: str) -> str:
        return f"[2024-05-21 {clock}] " if timestamps else ""

    lines = [f"{stamp('11:27:50,001')}[rank{rank}]: step 100 | loss 2.31 | lr 1e-4"]
    if rank == ROOT_RANK:
        lines.append(f"{stamp('11:27:54,120')}[rank{rank}]: {OOM}")
    else:
        # Some ranks write CANN plog lines: another time format, rank only in the file name.
        plog_time = f"2024-05-21-11:57:54.{100 + rank}.645" if timestamps else ""
        lines.append(f"[ERROR] HCCL(4242,python):{plog_time} [task_exception_handler.cc:92] {NOTIFY_TIMEOUT}")
        lines.append(f"{stamp(f'11:57:55,{rank:03d}')}[rank{rank}]: {DIST_FAILED}")
    return "\n".join(lines) + "\n"


def write_rank_logs(directory: Path, *, timestamps: bool = True) -> list[Path]:
    paths = []
    for rank in range(RANKS):
        path = directory / f"rank_{rank}.log"
        path.write_text(rank_log(rank, timestamps=timestamps), encoding="utf-8")
        paths.append(path)
    return paths
