"""Import mined cases into the real corpus (logs_samples/real) and give each thread its split, once.

The split is decided by a keyed hash of the thread URL, so it never changes when cases are added
and nobody chooses it: about 40% of threads go to `test`. Threads the KB was written from (cited
by an entry) and the shared dev set are `train` by construction. A case that is already in the
corpus keeps its split (a studied test case is moved to train by editing cases.yaml, never back).

    python scripts/corpus_import.py MINED_DIR [MINED_DIR ...] [--dev ../shared/logs/dev]
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.kbtools.cases import thread_key  # noqa: E402  (the checkout's own, as the tests compare threads)

CORPUS = ROOT / "logs_samples" / "real"
SPLIT_KEY = "ascend-triage-split-v1"
TEST_SHARE = 40
FIELDS = (
    "id",
    "source",
    "repo",
    "category",
    "split",
    "root_cause",
    "fix",
    "fix_confirmed",
    "cause_terms",
    "fix_terms",
    "workload",
    "origin",
    "log_file",
)


def split_of(url: str, cited: set[str]) -> str:
    if thread_key(url) in cited:
        return "train"
    digest = int(hashlib.sha256(f"{SPLIT_KEY}:{_norm(url)}".encode()).hexdigest(), 16)
    return "test" if digest % 100 < TEST_SHARE else "train"


def _norm(url: str) -> str:
    return url.strip().rstrip("/").lower()


def cited_by_kb() -> set[str]:
    """Every page the KB cites (a reference, a fix's `confirmed_by`), by thread as the tests compare them:
    a documentation page an entry was written from is no more blind than an issue thread."""
    pattern = re.compile(r"https?://[^\s'\"\],]+")
    return {
        thread_key(m)
        for path in (ROOT / "kb").rglob("*.yaml")
        for m in pattern.findall(path.read_text(encoding="utf-8"))
    }


REPEAT_SHARE = 0.5
"""A mined log whose telling lines are at least this share another case's lines repeats that case (two pages
that paste one failure, a docs page and its mirror): it is skipped, so that one failure counts once and
never sits in both splits."""
TELLING_CHARS = 30
"""Lines shorter than this (a bare `Traceback`, a banner) say nothing of which failure a log is."""


def _telling_lines(log: Path) -> set[str]:
    text = log.read_text(encoding="utf-8", errors="replace")
    return {line.strip() for line in text.splitlines() if len(line.strip()) >= TELLING_CHARS}


def _repeated(lines: set[str], by_line: dict[str, set[str]]) -> str | None:
    """The case whose log holds REPEAT_SHARE of these lines, if one does."""
    shared: dict[str, int] = {}
    for line in lines:
        for case in by_line.get(line, ()):
            shared[case] = shared.get(case, 0) + 1
    best = max(shared, key=shared.__getitem__, default=None)
    return best if best is not None and shared[best] >= REPEAT_SHARE * len(lines) else None


def _repo_of(url: str) -> str:
    parts = url.split("/")
    return f"{parts[3]}/{parts[4]}" if len(parts) > 4 else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mined", nargs="*", type=Path)
    parser.add_argument("--dev", type=Path, help="the shared dev set: joins as train")
    args = parser.parse_args()
    (CORPUS / "logs").mkdir(parents=True, exist_ok=True)
    cases_path = CORPUS / "cases.yaml"
    cases = yaml.safe_load(cases_path.read_text(encoding="utf-8")) if cases_path.is_file() else []
    seen = {_norm(c["source"]) for c in cases}
    ids = {c["id"] for c in cases}
    cited = cited_by_kb()
    sources: list[tuple[Path, Path, str]] = [(d / "cases.yaml", d / "logs", "mined") for d in args.mined]
    if args.dev:
        sources.append((args.dev / "cases.yaml", args.dev, "shared-dev"))
    by_line: dict[str, set[str]] = {}
    for case in cases:
        for line in _telling_lines(CORPUS / "logs" / case["log_file"]):
            by_line.setdefault(line, set()).add(case["id"])
    added = 0
    for labels, logs, origin in sources:
        for row in yaml.safe_load(labels.read_text(encoding="utf-8")) or []:
            url = row["source"]
            log = logs / row["log_file"]
            if _norm(url) in seen or row["id"] in ids or not log.is_file() or log.stat().st_size == 0:
                continue
            lines = _telling_lines(log)
            repeated = _repeated(lines, by_line) if lines else None
            if repeated is not None:
                print(f"skipped {row['id']}: its log repeats that of {repeated}")
                continue
            for line in lines:
                by_line.setdefault(line, set()).add(row["id"])
            seen.add(_norm(url))
            ids.add(row["id"])
            row = dict(row)
            row.setdefault("repo", _repo_of(url))
            row["origin"] = origin
            row["split"] = "train" if origin == "shared-dev" else split_of(url, cited)
            row["log_file"] = f"{row['id']}.log"
            shutil.copyfile(log, CORPUS / "logs" / row["log_file"])
            cases.append({key: row[key] for key in FIELDS if key in row})
            added += 1
    cases.sort(key=lambda c: (c["split"], c["category"], c["id"]))
    header = "# The real corpus: excerpts from public issue threads, as pasted. See README 'Real corpus'.\n"
    cases_path.write_text(
        header + yaml.safe_dump(cases, sort_keys=False, allow_unicode=True, width=120), encoding="utf-8"
    )
    print(f"added {added}; corpus {len(cases)} cases")


if __name__ == "__main__":
    main()
