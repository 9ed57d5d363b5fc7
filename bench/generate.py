"""Generate a realistic multi-rank training log of a given size, for benchmarks.

Healthy step lines, INFO chatter and warnings from several ranks, with a sparse sprinkle (about one
line in 2,000) of real Ascend error signatures. Deterministic for a given seed.

    python bench/generate.py --size-mb 1024 --out bench/out/train-1g.log
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

# Weights below: step lines dominate; 5% are a transformers warning, far more often than real jobs
# print it; 1% are metric lines whose words ("error") make the prefilter look twice, to keep the
# cost of such noise in the figures.
HEALTHY = (
    "[{ts}] [rank{r}]: INFO trainer.py:2241 step {s}/200000 | loss {loss:.4f} | grad_norm {gn:.3f} | lr {lr:.3e} | tokens/s {tps}",
    "[{ts}] [rank{r}]: INFO memory.py:88 npu mem allocated {a:.2f} GiB reserved {b:.2f} GiB",
    "[{ts}] [rank{r}]: INFO dataloader.py:412 prefetch queue {q}/32, worker {w} ready",
    "[{ts}] [rank{r}]: INFO checkpoint.py:77 saved shard {q} of step {s} to /data/ckpt/step_{s}/shard_{q}.pt",
    "[{ts}] [rank{r}]: WARNING modeling_utils.py:1023 `use_cache=True` is incompatible with gradient checkpointing. Setting `use_cache=False`.",
    "[{ts}] [rank{r}]: INFO hccl_utils.py:54 all_reduce bucket {q} size {b:.1f} MiB took {gn:.3f} ms",
    "[{ts}] [rank{r}]: INFO metrics.py:45 eval step {s}: token error rate {gn:.4f}, exact match {lr:.3e}",
)
HEALTHY_WEIGHTS = (60, 10, 10, 3, 5, 11, 1)
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
)


def lines(rng: random.Random, ranks: int, error_rate: float):  # type: ignore[no-untyped-def]
    step = 0
    seconds = 0
    while True:
        step += 1
        seconds += rng.randint(0, 2)
        ts = f"2026-11-28 {2 + seconds // 3600 % 20:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d},{rng.randint(0, 999):03d}"
        values = dict(
            ts=ts,
            r=rng.randrange(ranks),
            s=step,
            loss=3.0 - step / 100000 + rng.random() * 0.1,
            gn=rng.random() * 2,
            lr=1e-4 * rng.random(),
            tps=rng.randint(1000, 99999),
            a=rng.random() * 60,
            b=rng.random() * 60,
            q=rng.randrange(32),
            w=rng.randrange(8),
        )
        if rng.random() < error_rate:
            yield rng.choice(ERRORS).format(**values)
        else:
            yield rng.choices(HEALTHY, HEALTHY_WEIGHTS)[0].format(**values)


def generate(out: Path, size_mb: float, *, ranks: int = 8, error_rate: float = 1 / 2000, seed: int = 7) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    target = int(size_mb * (1 << 20))
    rng = random.Random(seed)
    written = 0
    batch: list[str] = []
    with out.open("w", encoding="utf-8") as handle:
        for line in lines(rng, ranks, error_rate):
            batch.append(line)
            written += len(line) + 1
            if len(batch) >= 10000 or written >= target:
                handle.write("\n".join(batch) + "\n")
                batch.clear()
            if written >= target:
                break
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=float, default=256)
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--error-rate", type=float, default=1 / 2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path("bench/out/train.log"))
    args = parser.parse_args()
    path = generate(args.out, args.size_mb, ranks=args.ranks, error_rate=args.error_rate, seed=args.seed)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
