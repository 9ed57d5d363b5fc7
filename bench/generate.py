"""Generate realistic multi-rank training logs of a given size, one per benchmark workload.

    python bench/generate.py --workload noisy --size-mb 512 --out bench/out/noisy.log

Workloads (deterministic for a given seed):

- `healthy`: step lines, INFO chatter and metric lines with random numbers (a tokens/s of 507035 is
  a metric, not a CANN error code), no error at all;
- `errors`: the same with 1% real Ascend error lines;
- `noisy`: a quarter of the lines are torch_npu's C++ warnings, 1 error line in 5,000;
- `fallback`: a quarter of the lines are torch_npu's warning that an operator falls back to the CPU,
  on every rank: lines that entries match (each is counted, not skipped), 1 error line in 5,000;
- `requests`: a vLLM-Ascend serving log that logs each request, its id in hex (a new shape per line
  until ids are masked), access and throughput lines, 1 failed request in 5,000;
- `distinct`: every line a different error message (6.2 million at 512 MiB): the worst case for
  work that follows distinct lines;
- `long-line`: a progress bar redrawn with carriage returns into one 200 MB line, an error inside it
  and another after it.
"""

from __future__ import annotations

import argparse
import random
import string
import sys
from collections.abc import Iterator
from pathlib import Path

# Weights below: step lines dominate; 5% are a transformers warning, far more often than real jobs
# print it; 1% are metric lines whose words ("error") make the prefilter look twice, to keep the
# cost of such noise in the figures.
HEALTHY = (
    "[{ts}] [rank{r}]: INFO trainer.py:2241 step {s}/200000 | loss {loss:.4f} | grad_norm {gn:.3f} | lr {lr:.3e} | tokens/s={tps}",
    "[{ts}] [rank{r}]: INFO memory.py:88 npu mem allocated {a:.2f} GiB reserved {b:.2f} GiB",
    "[{ts}] [rank{r}]: INFO dataloader.py:412 prefetch queue {q}/32, worker {w} ready",
    "[{ts}] [rank{r}]: INFO checkpoint.py:77 saved shard {q} of step {s} to /data/ckpt/step_{s}/shard_{q}.pt",
    "[{ts}] [rank{r}]: WARNING modeling_utils.py:1023 `use_cache=True` is incompatible with gradient checkpointing. Setting `use_cache=False`.",
    "[{ts}] [rank{r}]: INFO hccl_utils.py:54 all_reduce bucket {q} size {b:.1f} MiB took {gn:.3f} ms",
    "[{ts}] [rank{r}]: INFO metrics.py:45 eval step {s}: token error rate {gn:.4f}, exact match {lr:.3e}, samples {tps}",
)
HEALTHY_WEIGHTS = (60, 10, 10, 3, 5, 11, 1)
NOISE = (
    "[W compiler_depend.ts:{q}] Warning: Device do not support double dtype now, dtype cast repalce with float.",
    "[W compiler_depend.ts:{q}] Warning: The oprator of {op} is not registered for autograd, fall back to CPU.",
)
"""torch_npu's C++ warnings, which real jobs print by the hundred thousand."""
FALLBACK = (
    "[{ts}] [rank{r}]: [W compiler_depend.ts:51] Warning: CAUTION: The operator 'aten::{fallback}' is not currently "
    "supported on the NPU backend and will fall back to run on the CPU. This may have performance implications.",
)
"""A warning that the CPU-fallback entries match: printed every step, each line counts."""
FALLBACK_OPS = ("bmm", "isin", "roll")
OPERATORS = ("MulBackward0", "npu_rms_norm", "npu_rotary_mul", "npu_fusion_attention", "AddmmBackward0")
EI0006 = (
    "[{ts}] [rank{r}]: EI0006: [PID: {tps}] 2026-11-28-02:17:44.320.123 Getting socket times out. Reason: Remote Rank "
    "did not send the data in time. Please check the reason for the rank being stuck"
)
ERRORS = (
    "[{ts}] [rank{r}]: RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU {r}; 60.97 GiB total capacity; "
    "41.07 GiB already allocated; 41.07 GiB current active; 1.84 GiB free; 57.61 GiB reserved in total by PyTorch)",
    "[{ts}] [rank{r}]: EI0002: The wait execution of the Notify register times out. Reason: The Notify register has not "
    "received the Notify record from remote rank [{q}].",
    "[{ts}] [rank{r}]: EZ1001: [PID: {tps}] self not implemented for DT_DOUBLE, should be in dtype support list "
    "[DT_FLOAT16,DT_FLOAT,DT_BFLOAT16,].",
    "[{ts}] [rank{r}]: [ERROR] RUNTIME({tps},python):2026-11-28-02:17:44.320.123 [stream.cc:1052] The aicore execution is "
    "abnormal, error code 507015.",
    "[{ts}] [rank{r}]: [W compiler_depend.ts:51] Warning: CAUTION: The operator 'aten::bmm' is not currently supported "
    "on the NPU backend and will fall back to run on the CPU. This may have performance implications.",
    EI0006,
)
SERVING = (
    "INFO {md} {hms} [logger.py:43] Received request cmpl-{rid}-0: prompt: 'Summarise the report.', params: "
    "SamplingParams(n=1, temperature=0.7, top_p=0.9, max_tokens={q}00), prompt_token_ids: None, lora_request: None.",
    "INFO {md} {hms} [engine.py:331] Finished request chatcmpl-{uuid}.",
    'INFO:     10.0.{w}.{q}:{tps} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "INFO {md} {hms} [metrics.py:455] Avg prompt throughput: {a:.1f} tokens/s, Avg generation throughput: {b:.1f} "
    "tokens/s, Running: {q} reqs, Swapped: 0 reqs, Pending: 0 reqs, NPU KV cache usage: {gn:.1f}%.",
)
SERVING_WEIGHTS = (40, 40, 15, 5)
FAILED_REQUEST = (
    "ERROR {md} {hms} [engine.py:212] Request chatcmpl-{uuid} failed: RuntimeError: NPU out of memory. Tried to "
    "allocate 2.00 GiB (NPU 0; 60.97 GiB total capacity; 57.61 GiB reserved in total by PyTorch)"
)
WORKLOADS = ("healthy", "errors", "noisy", "fallback", "requests", "distinct", "long-line")
LONG_LINE_MB = 200


def _values(rng: random.Random, ranks: int, step: int, seconds: int) -> dict[str, object]:
    return dict(
        ts=f"2026-11-28 {2 + seconds // 3600 % 20:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d},{rng.randint(0, 999):03d}",
        r=rng.randrange(ranks),
        s=step,
        loss=3.0 - step / 100000 + rng.random() * 0.1,
        gn=rng.random() * 2,
        lr=1e-4 * rng.random(),
        tps=rng.randint(1000, 999999),
        a=rng.random() * 60,
        b=rng.random() * 60,
        q=rng.randrange(32),
        w=rng.randrange(8),
        op=rng.choice(OPERATORS),
        fallback=rng.choice(FALLBACK_OPS),
    )


def lines(
    rng: random.Random, ranks: int, error_rate: float, noise_rate: float = 0.0, noise: tuple[str, ...] = NOISE
) -> Iterator[str]:
    step = 0
    seconds = 0
    while True:
        step += 1
        seconds += rng.randint(0, 2)
        values = _values(rng, ranks, step, seconds)
        draw = rng.random()
        if draw < error_rate:
            yield rng.choice(ERRORS).format(**values)
        elif draw < error_rate + noise_rate:
            yield rng.choice(noise).format(**values)
        else:
            yield rng.choices(HEALTHY, HEALTHY_WEIGHTS)[0].format(**values)


def serving(rng: random.Random) -> Iterator[str]:
    """A serving log that logs every request by its id (see `requests` above)."""
    seconds = 0
    while True:
        seconds += rng.randint(0, 1)
        rid = f"{rng.getrandbits(128):032x}"
        values = dict(
            _values(rng, 1, 0, seconds),
            md="11-28",
            hms=f"{2 + seconds // 3600 % 20:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}",
            rid=rid,
            uuid=f"{rid[:8]}-{rid[8:12]}-{rid[12:16]}-{rid[16:20]}-{rid[20:]}",
        )
        if rng.random() < 1 / 5000:
            yield FAILED_REQUEST.format(**values)
        else:
            yield rng.choices(SERVING, SERVING_WEIGHTS)[0].format(**values)


def distinct_errors(rng: random.Random, ranks: int) -> Iterator[str]:
    """Error lines that differ in their words, not only their numbers: no two share a shape."""
    letters = string.ascii_lowercase
    while True:
        word = "".join(rng.choices(letters, k=10))
        yield f"[rank{rng.randrange(ranks)}]: RuntimeError: aclnn{word.capitalize()} failed: tiling key {word} is not supported"


def _long_line(rng: random.Random) -> Iterator[str]:
    yield from (
        rng.choices(HEALTHY, HEALTHY_WEIGHTS)[0].format(**_values(rng, 8, step, step)) for step in range(1, 1000)
    )
    bar = "".join(
        f"\rtraining:  {n % 100:3d}%|{'#' * (n % 40):40}| {n}/1000000 [00:{n % 60:02d}<01:00, 12.3it/s]"
        for n in range(1000)
    )
    segments = LONG_LINE_MB * (1 << 20) // len(bar)
    error = "\r[rank3]: RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 3; 60.97 GiB total capacity)"
    yield "".join(bar if n != segments // 2 else bar + error for n in range(segments))
    yield "[rank3]: EI0002: The wait execution of the Notify register times out."


def workload_lines(workload: str, rng: random.Random, ranks: int) -> Iterator[str]:
    if workload == "healthy":
        return lines(rng, ranks, 0.0)
    if workload == "errors":
        return lines(rng, ranks, 0.01)
    if workload == "noisy":
        return lines(rng, ranks, 1 / 5000, noise_rate=0.25)
    if workload == "fallback":
        return lines(rng, ranks, 1 / 5000, noise_rate=0.25, noise=FALLBACK)
    if workload == "requests":
        return serving(rng)
    if workload == "distinct":
        return distinct_errors(rng, ranks)
    if workload == "long-line":
        return _long_line(rng)
    raise ValueError(f"unknown workload {workload!r} (known: {', '.join(WORKLOADS)})")


def generate(out: Path, size_mb: float, *, workload: str = "errors", ranks: int = 8, seed: int = 7) -> Path:
    """Write about `size_mb` MiB of `workload` lines to `out` (a long-line log is as long as its line)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    target = int(size_mb * (1 << 20))
    written = 0
    batch: list[str] = []
    with out.open("w", encoding="utf-8") as handle:
        for line in workload_lines(workload, random.Random(seed), ranks):
            batch.append(line)
            written += len(line) + 1
            if len(batch) >= 10000 or written >= target:
                handle.write("\n".join(batch) + "\n")
                batch.clear()
            if written >= target and workload != "long-line":
                break
        handle.write("\n".join(batch) + "\n" if batch else "")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", choices=WORKLOADS, default="errors")
    parser.add_argument("--size-mb", type=float, default=256)
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path("bench/out/train.log"))
    args = parser.parse_args()
    print(generate(args.out, args.size_mb, workload=args.workload, ranks=args.ranks, seed=args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
