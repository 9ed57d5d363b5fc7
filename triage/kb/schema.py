"""Write `kb/schema.json` from the models, so editors can autocomplete and check KB entries.

Run `python -m triage.kb.schema` after changing `triage/kb/models.py`; a test fails while it is stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from triage.kb.models import Entry
from triage.kb.paths import shipped_kb_dir


def schema_text() -> str:
    schema = Entry.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "ascend-triage knowledge-base entry"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def main() -> int:
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else shipped_kb_dir() / "schema.json"
    target.write_text(schema_text(), encoding="utf-8")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
