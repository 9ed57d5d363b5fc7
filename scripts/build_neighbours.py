"""Write kb/neighbours.tsv: the error lines of the real corpus's train split, labelled by category,
and kb/cases.tsv: what each of those cases' threads said (root cause, confirmed fix), and the stack
(workload, runtime) its log shows, so that advice is lent only to jobs of a stack that fits.

The safety net compares an unknown error with these lines (and with the KB's own examples), and
points at the closest reported failure. Only the train split is used, so the test split stays
blind. Error-looking lines of healthy logs are kept too, labelled `healthy`: an error that
resembles them is chatter, not a failure.

    python scripts/build_neighbours.py [--check]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.engine.context import JobContext, stack_text  # noqa: E402
from triage.engine.error_lines import SALIENCE, error_kind, message_of  # noqa: E402
from triage.engine.nearest import FRAMES_SUFFIX  # noqa: E402
from triage.engine.unclaimed import FRAME, MAX_FRAMES, frame_of  # noqa: E402
from triage.kbtools.cases import load_cases  # noqa: E402
from triage.kb.loader import safe_yaml  # noqa: E402
from triage.kb.paths import CASES_FILE, NEIGHBOURS_FILE  # noqa: E402

PER_CASE = 10
UNRESOLVED = re.compile(r"(?i)(?:unresolved|unknown|not (?:diagnosed|stated|resolved|known))\b")
"""How the corpus starts the root cause of a thread that found none ("unresolved (open). ...",
"unknown beyond the log: ..."): such a thread has no cause to lend, only its own symptoms."""
HEADER = "# category\tlabel\tline: written by scripts/build_neighbours.py from logs_samples/real (train split only)\n"
CASES_HEADER = (
    "# label\tthread\troot cause\tconfirmed fix\tstack: written by scripts/build_neighbours.py from"
    " logs_samples/real/cases.yaml (train split only)\n"
)


def rows() -> tuple[list[str], dict[str, str]]:
    """The neighbour lines of the train split, and the stack each case's log shows (read in the same pass)."""
    out: list[str] = []
    stacks: dict[str, str] = {}
    seen: set[tuple[str, str]] = set()
    for case in load_cases(ROOT / "logs_samples" / "real"):
        if case.split != "train":
            continue
        category = "healthy" if case.healthy else (case.category or "other")
        text = case.file.read_bytes().decode("utf-8", "replace")
        stacks[case.id] = _stack(text)
        found = []
        for number, line in enumerate(text.splitlines()):
            kind = error_kind(line)
            if kind:
                found.append((-SALIENCE[kind], number, message_of(line)[:300]))
        for _, _, message in sorted(found)[:PER_CASE]:
            message = message.replace("\t", " ")
            if (category, message) not in seen and len(message) >= 8:
                seen.add((category, message))
                out.append(f"{category}\tcase:{case.id}\t{message}\n")
        frames = [frame_of(found) for line in text.splitlines() if (found := FRAME.search(line))][:MAX_FRAMES]
        if frames:
            out.append(f"{category}\tcase:{case.id}{FRAMES_SUFFIX}\t{' '.join(frames)}\n")
    return out, stacks


def reported(neighbour_rows: list[str], stacks: dict[str, str]) -> list[str]:
    """Each failure case with neighbour lines whose thread found its cause or a fix: the thread, root
    cause and (if confirmed) fix, one line."""
    labelled = {row.split("\t")[1] for row in neighbour_rows}
    rows = safe_yaml((ROOT / "logs_samples" / "real" / "cases.yaml").read_text(encoding="utf-8"))
    out = []
    for row in rows:
        label = f"case:{row['id']}"
        if row.get("split") != "train" or row.get("category") == "healthy" or label not in labelled:
            continue
        fix = row.get("fix") if row.get("fix_confirmed") else ""
        if not fix and UNRESOLVED.match(str(row["root_cause"])):
            continue  # lent, its symptoms would read as the cause of another failure
        cells = [label, row["source"], _one_line(row["root_cause"]), _one_line(fix or ""), stacks[row["id"]]]
        out.append("\t".join(cells) + "\n")
    return out


def _stack(text: str) -> str:
    """The stack a case's log shows, read as a scan reads a job's context."""
    context = JobContext()
    for line in text.splitlines():
        context.observe(line)
    return stack_text(context.stack())


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is not current")
    args = parser.parse_args()
    neighbour_rows, stacks = rows()
    files = {
        ROOT / "kb" / NEIGHBOURS_FILE: HEADER + "".join(neighbour_rows),
        ROOT / "kb" / CASES_FILE: CASES_HEADER + "".join(reported(neighbour_rows, stacks)),
    }
    if args.check:
        stale = [target for target, content in files.items() if not _current(target, content)]
        for target in stale:
            print(f"{target} is out of date: run python scripts/build_neighbours.py", file=sys.stderr)
        return 1 if stale else 0
    for target, content in files.items():
        target.write_text(content, encoding="utf-8")
        print(f"wrote {target} ({content.count(chr(10)) - 1} lines)")
    return 0


def _current(target: Path, content: str) -> bool:
    return target.is_file() and target.read_text(encoding="utf-8") == content


if __name__ == "__main__":
    sys.exit(main())
