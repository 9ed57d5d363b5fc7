"""One command, every speed and memory figure, measured side by side in one run.

    python bench/run.py [--size-mb 512] [--workloads healthy,errors,noisy,fallback,requests,distinct,long-line] [--skip-tail]

1. builds one log per workload (bench/generate.py, cached in bench/out/): healthy, 1% errors, 25%
   noisy torch_npu warnings, 25% CPU-fallback warnings that entries match, a serving log of request
   ids, distinct error lines (6.2 million at 512 MiB), one 200 MB line;
2. on each, interleaved and repeated, times `rg -c -f bench/error-keywords.txt` (25 error words),
   `rg -c -i -f <the KB's own regex signatures>`, `triage scan --json` with its default jobs (the
   cores) and with `--jobs 1`, and prints the ratios against both rg runs with each command's peak
   RSS (that of its largest single process, from wait4: a worker's, not the sum of them);
3. prints the start-up cost of scanning a 10 KB log (median of 10 runs, interpreter included) and
   the tail latency p50/p99 from bench/tail_latency.py.

Needs ripgrep: `apt-get install ripgrep`, `brew install ripgrep`, `cargo install ripgrep`, or the
release binaries of https://github.com/BurntSushi/ripgrep/releases.

Targets (issue 13, 512 MiB, 2 cores, default jobs): noisy <= 1.5x rg with the keywords, errors <=
1.2x, healthy <= 1.0x, one core <= 2x on every workload, peak RSS <= 150 MB per process; small-log
scan <= 0.3 s, tail p99 < 100 ms.
"""

from __future__ import annotations

import argparse
import json
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
KEYWORDS = ROOT / "bench" / "error-keywords.txt"
sys.path.insert(0, str(ROOT))

from bench.generate import LONG_LINE_MB, WORKLOADS, generate  # noqa: E402

NO_RG = (
    "bench/run.py needs ripgrep (rg) on PATH, the bar every figure is a ratio to. Install it with "
    "`apt-get install ripgrep`, `brew install ripgrep` or `cargo install ripgrep`, or take a binary from "
    "https://github.com/BurntSushi/ripgrep/releases."
)


def build_log(workload: str, size_mb: int) -> Path:
    size_mb = LONG_LINE_MB if workload == "long-line" else size_mb
    target = OUT / f"{workload}-{size_mb}m.log"
    if not (target.exists() and target.stat().st_size >= size_mb << 20):
        print(f"building {target} ...", flush=True)
        # In a process of its own: a child's peak RSS starts from this process's peak (the kernel
        # carries it over the exec), and building the long line in here once read 627 MB for triage.
        generator = [sys.executable, str(ROOT / "bench" / "generate.py"), "--workload", workload]
        subprocess.run([*generator, "--size-mb", str(size_mb), "--out", str(target)], check=True, capture_output=True)
    return target


def regex_signatures() -> list[str]:
    """The KB's regex signatures, read in a process of its own (see `build_log`): loading the KB here,
    or compiling its cache on a first run, raised this process's peak and with it every measured
    triage's (70 MB reported where the scans themselves peaked at 61)."""
    found = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--kb-signatures"], check=True, capture_output=True
    )
    return json.loads(found.stdout)


def _print_regex_signatures() -> None:
    from triage.engine import load_engine_kb

    kb, _ = load_engine_kb()
    # ripgrep has no `(?P<name>` in older releases and no look-around: keep what it accepts.
    print(json.dumps([re.sub(r"\(\?P<\w+>", "(", kb.signatures[i].regex_source or "") for i in kb.exact]))


def timed(command: list[str], **kwargs: object) -> tuple[float, int, subprocess.CompletedProcess[bytes]]:
    """Wall seconds, peak RSS in MB, and the finished process. The RSS is wait4's: the peak of the
    largest single process among the child and its workers, not their sum nor the bench's own."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=err, **kwargs)  # type: ignore[call-overload]
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        completed = subprocess.CompletedProcess(command, child.returncode, out.read(), err.read())
        return wall, usage.ru_maxrss // 1024, completed


def usable_patterns(patterns: list[str]) -> list[str]:
    """Drop the few patterns ripgrep rejects, so that one cannot sink the comparison."""
    return [
        p
        for p in patterns
        if subprocess.run(["rg", "-q", "-e", p, os.devnull], capture_output=True).returncode in (0, 1)
    ]


def startup_seconds(runs: int = 10) -> float:
    small = OUT / "small-10k.log"
    generate(small, 10 / 1024, workload="errors")
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


def measure(commands: dict[str, list[str]], repeat: int) -> dict[str, tuple[float, int]]:
    """Each command `repeat` times, interleaved (this machine's speed drifts by tens of percent):
    median wall seconds, highest peak RSS in MB."""
    samples: dict[str, list[tuple[float, int]]] = {name: [] for name in commands}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(repeat):
        for name, command in commands.items():
            wall, peak, proc = timed(command, env=env)
            if proc.returncode not in (0, 1):
                raise SystemExit(f"{' '.join(command)} failed: {proc.stderr.decode()[-500:]}")
            samples[name].append((wall, peak))
    return {name: (statistics.median(w for w, _ in runs), max(p for _, p in runs)) for name, runs in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=512)
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated, of: " + ", ".join(WORKLOADS))
    parser.add_argument("--skip-tail", action="store_true", help="leave out the tail latency run (about 20 s)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each command (the median is shown)")
    parser.add_argument("--kb-signatures", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.kb_signatures:
        _print_regex_signatures()
        return 0
    if shutil.which("rg") is None:
        print(NO_RG, file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    # An installed wheel's bytecode is compiled at install; a checkout run with PYTHONDONTWRITEBYTECODE
    # set would compile every changed module again on each timed run (tens of ms of start-up).
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "triage")], check=True, stdout=subprocess.DEVNULL
    )
    patterns_file = OUT / "kb-patterns.txt"
    patterns = usable_patterns(regex_signatures())
    patterns_file.write_text("\n".join(patterns) + "\n")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    print(
        f"{cores} cores; rg: {subprocess.run(['rg', '--version'], capture_output=True, text=True).stdout.splitlines()[0]}; "
        f"keywords: {KEYWORDS.name} ({len(KEYWORDS.read_text().split(chr(10))) - 1}), KB: {len(patterns)} regex signatures; "
        f"median of {args.repeat} runs; ratios are wall time over rg's"
    )
    print(
        f"{'workload':10} {'MiB':>5} {'rg kw':>7} {'rg KB':>7} {'triage':>7} {'/kw':>6} {'/KB':>6} "
        f"{'1 core':>7} {'/kw':>6} {'/KB':>6} {'RSS MB':>7} {'rg RSS':>7}"
    )
    for workload in args.workloads.split(","):
        log = build_log(workload, args.size_mb)
        subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL)  # both tools then read from the page cache
        scan = [sys.executable, "-m", "triage", "scan", "--json", "--no-progress"]
        figures = measure(
            {
                "kw": ["rg", "-c", "-f", str(KEYWORDS), str(log)],
                "kb": ["rg", "-c", "-i", "-f", str(patterns_file), str(log)],
                "default": scan + [str(log)],
                "one": scan + ["--jobs", "1", str(log)],
            },
            args.repeat,
        )
        kw, kb, default, one = (figures[name][0] for name in ("kw", "kb", "default", "one"))
        rss = max(figures["default"][1], figures["one"][1])
        print(
            f"{workload:10} {log.stat().st_size / (1 << 20):5.0f} {kw:7.2f} {kb:7.2f} {default:7.2f} {default / kw:5.1f}x "
            f"{default / kb:5.2f}x {one:7.2f} {one / kw:5.1f}x {one / kb:5.2f}x {rss:7d} {figures['kw'][1]:7d}",
            flush=True,
        )
    print(f"small-log scan: {startup_seconds():.3f} s wall, median of 10, interpreter included (target <= 0.3 s)")
    if not args.skip_tail:
        print(f"tail latency:\n  {tail_latency()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
