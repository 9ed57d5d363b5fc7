"""How far the corpus's categories can be read at all: blind labels against the corpus's own.

    python scripts/agreement.py

docs/agreement/ holds two blind labellings of the same 160 train cases (drawn with a fixed seed),
each made by a reader who saw nothing of the corpus but what the file names:
- from-root-cause.jsonl: from each thread's root cause and fix, as cases.yaml words them: how
  consistent the eight categories are once what failed is known;
- from-log.jsonl: from each log alone (files renamed, so that no case id gave the answer away):
  how much of the category a log itself tells.
Both readers had the same one-line definition of each category. This prints each labelling's
agreement with the corpus (first choice, and within its two choices) and, for comparison, how often
`triage eval --leave-thread-out` names the same cases right.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.cli.common import load_scan_kb  # noqa: E402
from triage.kbtools.cases import load_cases  # noqa: E402
from triage.kbtools.evaluate import evaluate  # noqa: E402

LABELS = ROOT / "docs" / "agreement"
CORPUS = ROOT / "logs_samples" / "real"


def _labels(name: str) -> dict[str, tuple[str, str | None]]:
    rows = [json.loads(line) for line in (LABELS / name).read_text().splitlines() if line.strip()]
    return {row["id"]: (row["category"], row.get("second")) for row in rows}


def main() -> int:
    cases = {case.id: case for case in load_cases(CORPUS)}
    readings = {
        "from the root cause": _labels("from-root-cause.jsonl"),
        "from the log alone": _labels("from-log.jsonl"),
    }
    ids = sorted(set.intersection(*(set(labels) for labels in readings.values())))
    for what, labels in readings.items():
        first = sum(labels[i][0] == cases[i].category for i in ids)
        two = sum(cases[i].category in labels[i] for i in ids)
        print(f"blind reader, {what}: {first}/{len(ids)} ({first / len(ids):.1%}), within two {two / len(ids):.1%}")
    kb = load_scan_kb(argparse.Namespace(kb=[], shipped_kb=True))
    if kb is None:
        return 1
    report = evaluate(kb, [cases[i] for i in ids], leave_thread_out=True)
    right = sum(outcome.top1 for outcome in report.outcomes)
    print(f"triage, leave-thread-out: {right}/{len(ids)} ({right / len(ids):.1%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
