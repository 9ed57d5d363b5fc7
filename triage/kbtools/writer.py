"""Write entry data as a readable YAML file at `<kb dir>/<category>/<id>.yaml`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from triage.kb.models import Entry
from triage.kb.paths import shipped_kb_dir


class _Dumper(yaml.SafeDumper):
    pass


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # Block style keeps multi-line summaries and log snippets editable as they look in the log.
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


def entry_path(kb_dir: Path, data: dict[str, Any]) -> Path:
    return kb_dir / str(data["category"]) / f"{data['id']}.yaml"


def write_entry(kb_dir: Path, data: dict[str, Any], *, force: bool = False) -> Path:
    """Validate `data` against the schema and write it; refuses to replace a file unless `force`."""
    Entry.model_validate(data)
    path = entry_path(kb_dir, data)
    if path.exists() and not force:
        raise FileExistsError(f"{path} already exists (use --force to replace it)")
    path.parent.mkdir(parents=True, exist_ok=True)
    schema_file = shipped_kb_dir().resolve() / "schema.json"
    # Relative inside the project (portable in git), absolute for a user dir elsewhere.
    inside = path.parent.resolve().is_relative_to(schema_file.parent.parent)
    schema = os.path.relpath(schema_file, path.parent.resolve()) if inside else str(schema_file)
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110)
    path.write_text(f"# yaml-language-server: $schema={schema}\n{body}", encoding="utf-8")
    return path
