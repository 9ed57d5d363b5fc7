"""One command, every speed and memory figure, measured side by side in one run.

    python bench/run.py [--size-mb 1024] [--skip-tail]

1. builds a realistic multi-rank log of --size-mb (bench/generate.py, cached in bench/out/);
2. times `triage scan --json` on it, with its peak RSS;
3. times `rg -c -f <the KB's regex signatures>` on the same file (`grep -E -c -f` without rg);
4. prints the ratio, the start-up cost of scanning a 10 KB log (median of 10 runs, interpreter
   included), and the tail latency p50/p99 from bench/tail_latency.py.

Targets (issue 7): scan at most 1.5x ripgrep, peak RSS at most 300 MB, small-log scan at most 0.3 s,
tail p99 under 100 ms.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
sys.path.insert(0, str(ROOT))

from bench.generate import generate  # noqa: E402

BASE_MB = 64
"""The generator writes this much; bigger logs repeat it, which keeps building a 1 GB log quick."""


def build_log(size_mb: int) -> Path:
    target = OUT / f"train-{size_mb}m.log"
    if target.exists() and target.stat().st_size >= size_mb << 20:
        return target
    base = generate(OUT / f"train-base-{BASE_MB}m.log", BASE_MB)
    with target.open("wb") as out:
        for _ in range(max(1, size_mb // BASE_MB)):
            with base.open("rb") as chunk:
                shutil.copyfileobj(chunk, out, 16 << 20)
    return target


def regex_signatures() -> list[str]:
    from triage.engine import load_engine_kb

    kb, _ = load_engine_kb()
    # ripgrep has no `(?P<name>` in older releases and no look-around: keep what it accepts.
    return [re.sub(r"\(\?P<\w+>", "(", kb.signatures[i].regex_source or "") for i in kb.exact]


def timed(command: list[str], **kwargs: object) -> tuple[float, float, int, subprocess.CompletedProcess[bytes]]:
    """Wall seconds, CPU seconds (user + system: steadier than wall time on a shared VM), peak RSS
    in MB of this child alone (from wait4), and the finished process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=err, **kwargs)  # type: ignore[call-overload]
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        completed = subprocess.CompletedProcess(command, child.returncode, out.read(), err.read())
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024, completed


def grep_command(patterns: Path, log: Path) -> list[str]:
    if shutil.which("rg"):
        return ["rg", "-c", "-i", "-f", str(patterns), str(log)]
    return ["grep", "-E", "-c", "-i", "-f", str(patterns), str(log)]


def usable_patterns(patterns: list[str]) -> list[str]:
    """Drop the few patterns the grep tool rejects, so that one cannot sink the comparison."""
    tool = "rg" if shutil.which("rg") else "grep"
    keep = []
    for pattern in patterns:
        check = [tool, "-q", "-e", pattern, os.devnull] if tool == "rg" else ["grep", "-E", "-q", "-e", pattern, os.devnull]
        if subprocess.run(check, capture_output=True).returncode in (0, 1):
            keep.append(pattern)
    return keep


def startup_seconds(runs: int = 10) -> float:
    small = OUT / "small-10k.log"
    with (OUT / f"train-base-{BASE_MB}m.log").open("rb") as base:
        small.write_bytes(base.read(10 * 1024))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # As installed: pip compiles bytecode at install time, and PYTHONDONTWRITEBYTECODE (set on some
    # machines) would otherwise make every start recompile the source tree.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "triage"), str(ROOT / "probes")], check=True)
    command = [sys.executable, "-m", "triage", "scan", "--json", str(small)]
    subprocess.run(command, capture_output=True, env=env)  # warm the KB cache and the page cache
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, capture_output=True, env=env)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def tail_latency() -> str:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "tail_latency.py")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    lines = [line for line in proc.stdout.splitlines() if "latency" in line or "noise" in line]
    return "\n  ".join(lines) or f"failed: {proc.stderr.strip()[-300:]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--skip-tail", action="store_true", help="leave out the tail latency run (about 20 s)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each tool (the median is shown)")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    log = build_log(args.size_mb)
    patterns_file = OUT / "patterns.txt"
    patterns = usable_patterns(regex_signatures())
    patterns_file.write_text("\n".join(patterns) + "\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    size_mb = log.stat().st_size / (1 << 20)
    print(f"log: {log} ({size_mb:,.0f} MiB), {len(patterns)} regex signatures, {os.cpu_count()} cores, "
          f"median of {args.repeat} runs each")
    # Read once so that both tools find the file in the page cache.
    subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL)
    # Interleaved repeats, median of each: this machine's speed drifts by tens of percent.
    grep_times: list[tuple[float, float]] = []
    triage_times: dict[int, list[tuple[float, float]]] = {1: [], (os.cpu_count() or 1): []}
    rss = 0
    for _ in range(args.repeat):
        wall, cpu, _, grep_proc = timed(grep_command(patterns_file, log))
        grep_times.append((wall, cpu))
        for jobs, times in triage_times.items():
            command = [sys.executable, "-m", "triage", "scan", "--json", "--no-progress", "--jobs", str(jobs), str(log)]
            wall, cpu, peak, proc = timed(command, env=env)
            if proc.returncode not in (0, 1):
                print(f"triage scan failed: {proc.stderr.decode()[-500:]}")
                return 1
            times.append((wall, cpu))
            rss = max(rss, peak)

    def medians(samples: list[tuple[float, float]]) -> tuple[float, float]:
        return statistics.median(w for w, _ in samples), statistics.median(c for _, c in samples)

    grep_wall, grep_cpu = medians(grep_times)
    tool = "rg" if shutil.which("rg") else "grep -E"
    print(f"{tool + ' -c -f:':27}{grep_wall:6.2f} s wall, {grep_cpu:6.2f} s CPU ({size_mb / grep_wall:,.0f} MiB/s); "
          f"{grep_proc.stdout.decode().strip()} matching lines")
    for jobs, samples in triage_times.items():
        wall, cpu = medians(samples)
        label = f"triage scan --jobs {jobs}:"
        print(f"{label:27}{wall:6.2f} s wall, {cpu:6.2f} s CPU ({size_mb / wall:,.0f} MiB/s); "
              f"ratio {wall / grep_wall:.2f}x wall, {cpu / grep_cpu:.2f}x CPU"
              + ("  (target <= 1.5x on one core)" if jobs == 1 else ""))
    print(f"triage peak RSS:           {rss:6d} MB per process (target <= 300 MB)")
    print(f"small-log scan:           {startup_seconds():7.3f} s wall, median of 10, interpreter included (target <= 0.3 s)")
    if not args.skip_tail:
        print(f"tail latency:\n  {tail_latency()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
