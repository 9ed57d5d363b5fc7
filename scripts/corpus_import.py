"""Import mined cases into the real corpus (logs_samples/real) and give each thread its split, once.

The split is decided by a keyed hash of the thread URL, so it never changes when cases are added
and nobody chooses it: about 40% of threads go to `test`. Threads the KB was written from (cited
by an entry) and the shared dev set are `train` by construction. A case that is already in the
corpus keeps its split (a studied test case is moved to train by editing cases.yaml, never back).

    python scripts/corpus_import.py MINED_DIR [MINED_DIR ...] [--dev ../shared/logs/dev] [--corpus DIR]
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
from triage.kbtools.twins import LogIndex, telling_lines  # noqa: E402

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


def _repo_of(url: str) -> str:
    parts = url.split("/")
    return f"{parts[3]}/{parts[4]}" if len(parts) > 4 else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mined", nargs="*", type=Path)
    parser.add_argument("--dev", type=Path, help="the shared dev set: joins as train")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help=f"the corpus to add to (default {CORPUS})")
    args = parser.parse_args()
    corpus = args.corpus
    (corpus / "logs").mkdir(parents=True, exist_ok=True)
    cases_path = corpus / "cases.yaml"
    cases = yaml.safe_load(cases_path.read_text(encoding="utf-8")) if cases_path.is_file() else []
    seen = {_norm(c["source"]) for c in cases}
    ids = {c["id"] for c in cases}
    cited = cited_by_kb()
    sources: list[tuple[Path, Path, str]] = [(d / "cases.yaml", d / "logs", "mined") for d in args.mined]
    if args.dev:
        sources.append((args.dev / "cases.yaml", args.dev, "shared-dev"))
    corpus_logs = LogIndex((case["id"], telling_lines(corpus / "logs" / case["log_file"])) for case in cases)
    added = 0
    for labels, logs, origin in sources:
        for row in yaml.safe_load(labels.read_text(encoding="utf-8")) or []:
            url = row["source"]
            log = logs / row["log_file"]
            if _norm(url) in seen or row["id"] in ids or not log.is_file() or log.stat().st_size == 0:
                continue
            lines = telling_lines(log)
            repeated = corpus_logs.twin(row["id"], lines)
            if repeated is not None:
                print(f"skipped {row['id']}: its log repeats that of {repeated} (see triage.kbtools.twins)")
                continue
            corpus_logs.add(row["id"], lines)
            seen.add(_norm(url))
            ids.add(row["id"])
            row = dict(row)
            row.setdefault("repo", _repo_of(url))
            row["origin"] = origin
            row["split"] = "train" if origin == "shared-dev" else split_of(url, cited)
            row["log_file"] = f"{row['id']}.log"
            shutil.copyfile(log, corpus / "logs" / row["log_file"])
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
