"""Write kb/neighbours.tsv: the error lines of the real corpus's train split, labelled by category.

The safety net compares an unknown error with these lines (and with the KB's own examples). Only
the train split is used, so the test split stays blind. Error-looking lines of healthy logs are
kept too, labelled `healthy`: an error that resembles them is chatter, not a failure.

    python scripts/build_neighbours.py [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.engine.error_lines import SALIENCE, error_kind, message_of  # noqa: E402
from triage.engine.nearest import FRAMES_SUFFIX  # noqa: E402
from triage.engine.unclaimed import FRAME, MAX_FRAMES, frame_of  # noqa: E402
from triage.kbtools.evaluate import load_cases  # noqa: E402
from triage.kb.paths import NEIGHBOURS_FILE  # noqa: E402

PER_CASE = 10
HEADER = "# category\tlabel\tline: written by scripts/build_neighbours.py from logs_samples/real (train split only)\n"


def rows() -> list[str]:
    out: list[str] = []
    seen: set[tuple[str, str]] = set()
    for case in load_cases(ROOT / "logs_samples" / "real"):
        if case.split != "train":
            continue
        category = "healthy" if case.healthy else (case.category or "other")
        text = case.file.read_bytes().decode("utf-8", "replace")
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
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is not current")
    args = parser.parse_args()
    target = ROOT / "kb" / NEIGHBOURS_FILE
    content = HEADER + "".join(rows())
    if args.check:
        current = target.read_text(encoding="utf-8") if target.is_file() else ""
        if current != content:
            print(f"{target} is out of date: run python scripts/build_neighbours.py", file=sys.stderr)
            return 1
        return 0
    target.write_text(content, encoding="utf-8")
    print(f"wrote {target} ({content.count(chr(10)) - 1} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
