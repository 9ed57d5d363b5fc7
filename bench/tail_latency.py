"""How soon does `triage tail` report a failure while a job floods its log?

Runs `triage tail --json` as a subprocess on a log file, writes background noise to that file at
20k lines/s, injects error lines at random moments and measures from the write of each error line
to the diagnosis event on the child's stdout. Each injected line belongs to its own entry of a
generated KB (merged over the shipped one with --kb), because an entry is announced only once.

    PYTHONPATH=. python bench/tail_latency.py [--rate 20000] [--injections 50]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TICK = 0.002
TARGET_MS = 100.0


def fault_id(number: int) -> str:
    return f"bench-fault-{number:03d}"


def fault_line(number: int, rank: int) -> bytes:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    return f"[{stamp},000] [rank{rank}]: RuntimeError: BENCHFAULT{number:03d}: injected failure\n".encode()


def write_kb(directory: Path, count: int) -> None:
    folder = directory / "bench"
    folder.mkdir(parents=True)
    for number in range(count):
        (folder / f"{fault_id(number)}.yaml").write_text(
            f"id: {fault_id(number)}\ntitle: Injected failure {number}\ncategory: bench\nseverity: error\n"
            f"summary: A line written by bench/tail_latency.py.\nsignatures:\n  - regex: 'BENCHFAULT{number:03d}\\b'\n",
            encoding="utf-8",
        )


def noise_pool(size: int = 4096) -> list[bytes]:
    """Healthy training output: step lines, some warnings, some timestamps, as ranks print them."""
    randomness = random.Random(7)
    pool = []
    for step in range(size):
        rank = step % 8
        loss = 2.5 - step / size + randomness.random() / 10
        line = f"[rank{rank}]: step {step} | loss {loss:.4f} | lr 1.0e-04 | grad_norm {randomness.random():.3f} | tokens/s {randomness.randint(9000, 12000)}"
        if step % 97 == 0:
            line = f"[W{time.strftime('%m%d %H:%M:%S')}.123] [rank{rank}]: warning: dataloader worker {step % 4} slow"
        pool.append(line.encode() + b"\n")
    return pool


class EventReader(threading.Thread):
    """Reads the child's JSON lines and notes when each diagnosis arrived."""

    def __init__(self, stream) -> None:  # type: ignore[no-untyped-def]
        super().__init__(daemon=True)
        self.stream = stream
        self.arrived: dict[str, float] = {}

    def run(self) -> None:
        for line in self.stream:
            now = time.monotonic()
            event = json.loads(line)
            if event["event"] == "diagnosis":
                self.arrived.setdefault(event["id"], now)

    def wait_for(self, entry_id: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while entry_id not in self.arrived and time.monotonic() < deadline:
            time.sleep(0.01)
        return entry_id in self.arrived


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=20_000, help="noise lines per second")
    parser.add_argument("--injections", type=int, default=50)
    parser.add_argument(
        "--gap", type=float, nargs=2, default=(0.05, 0.3), metavar=("MIN", "MAX"), help="seconds between injections"
    )
    parser.add_argument("--interval", type=float, default=0.05, help="the tail's poll interval")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        kb_dir, log = Path(scratch) / "kb", Path(scratch) / "rank_0.log"
        write_kb(kb_dir, args.injections + 1)
        log.write_bytes(b"")
        command = [sys.executable, "-m", "triage", "tail", "--json", "--from-start", "--kb", str(kb_dir)]
        command += ["--interval", str(args.interval), str(log)]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
        reader = EventReader(child.stdout)
        reader.start()
        fd = os.open(log, os.O_WRONLY | os.O_APPEND)
        try:
            # Fault 0 warms the child up: once it is reported, the child is following the file.
            os.write(fd, fault_line(0, 0))
            if not reader.wait_for(fault_id(0), timeout=60):
                print("the tail never reported the warm-up line", file=sys.stderr)
                return 1
            sent, noise_lines, seconds = flood(fd, args)
            for number in sent:
                reader.wait_for(fault_id(number), timeout=2.0)
        finally:
            os.close(fd)
            child.send_signal(signal.SIGINT)
            child.wait(timeout=30)
    latencies = [(reader.arrived[fault_id(n)] - t) * 1000 for n, t in sent.items() if fault_id(n) in reader.arrived]
    missed = len(sent) - len(latencies)
    print(f"noise: {noise_lines:,} lines in {seconds:.1f} s ({noise_lines / seconds:,.0f} lines/s); "
          f"{len(sent)} injected, {missed} missed")  # fmt: skip
    if latencies:
        p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
        print(f"latency write -> diagnosis event: p50 {p50:.1f} ms, p99 {p99:.1f} ms, "
              f"mean {statistics.mean(latencies):.1f} ms, max {max(latencies):.1f} ms (target p99 < {TARGET_MS:.0f} ms)")  # fmt: skip
    return 0 if latencies and not missed and percentile(latencies, 0.99) < TARGET_MS else 1


def flood(fd: int, args: argparse.Namespace) -> tuple[dict[int, float], int, float]:
    """Write noise at `args.rate` and the injections between; returns their write times."""
    pool = noise_pool()
    randomness = random.Random(11)
    sent: dict[int, float] = {}
    written = 0
    start = time.monotonic()
    next_fault = start + randomness.uniform(*args.gap)
    while len(sent) < args.injections:
        now = time.monotonic()
        due = int((now - start) * args.rate) - written
        if due > 0:
            os.write(fd, b"".join(pool[(written + i) % len(pool)] for i in range(due)))
            written += due
        if now >= next_fault:
            number = len(sent) + 1
            os.write(fd, fault_line(number, randomness.randrange(8)))
            sent[number] = time.monotonic()
            next_fault = now + randomness.uniform(*args.gap)
        time.sleep(TICK)
    return sent, written, time.monotonic() - start


if __name__ == "__main__":
    sys.exit(main())
