"""Rewrite KB entries to the current schema, in place and only where they use an old form.

Today's one rewrite: extraction. The old form named a value twice, a regex under `extract` and its
kind in a parallel `extract_kind` map; now each value is written once, its kind beside its name:

    extract: {total: '(\\d+) total'}                   extract:
    extract_kind: {total: size, code: int}      ->       total: {regex: '(\\d+) total', kind: size}
                                                         code: {kind: int}   # the regex's (?P<code>...)

The rest of each file (comments, quoting, order) is left as it is: only the lines of those keys are
replaced (a comment on those lines goes with them). A rewrite is written only when the file then parses to exactly the data the conversion
predicts, so running it again, or on current entries, changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from triage.kb.loader import KBError, compose_yaml, entry_files, read_entry_text

KINDLESS = "str"
"""The kind a value has when none is written; not written out."""


class MigrationError(Exception):
    """A file that cannot be rewritten safely; str() says which and why."""


@dataclass
class MigrationReport:
    rewritten: list[Path] = field(default_factory=list)
    current: int = 0
    failed: list[str] = field(default_factory=list)


def migrate_dir(directory: Path, *, write: bool = True) -> MigrationReport:
    """Rewrite every entry under `directory` that uses an old form (with `write=False`, only say which)."""
    report = MigrationReport()
    for path in entry_files(directory):
        # User entries are untrusted here as everywhere: bounded size, no aliases, bounded nesting.
        try:
            text = read_entry_text(path)
            new = migrate_text(text, path)
        except KBError as exc:
            report.failed.append(str(exc))
            continue
        except MigrationError as exc:
            report.failed.append(f"{path}: {exc}")
            continue
        except RecursionError:
            report.failed.append(f"{path}: nested too deeply; not migrated")
            continue
        if new == text:
            report.current += 1
            continue
        if write:
            path.write_text(new, encoding="utf-8")
        report.rewritten.append(path)
    return report


def migrate_text(text: str, path: Path) -> str:
    """`text` with every old-form signature rewritten; `text` itself when there is none."""
    root, data = compose_yaml(text, path)
    if root is None:
        return text
    lines = text.splitlines(keepends=True)
    # From the bottom up, so that each replacement leaves the line numbers above it valid.
    for signature in sorted(_old_signatures(root), key=lambda node: node.start_mark.line, reverse=True):
        lines = _rewrite(signature, lines)
    new = "".join(lines)
    if new != text and compose_yaml(new, path)[1] != _converted(data):
        raise MigrationError("the rewrite would change more than the extraction form; edit this file by hand")
    return new


def _old_signatures(node: yaml.Node) -> Iterator[yaml.MappingNode]:
    if isinstance(node, yaml.MappingNode):
        if _is_old(node):
            yield node
        for _, value in node.value:
            yield from _old_signatures(value)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from _old_signatures(item)


def _is_old(node: yaml.MappingNode) -> bool:
    keys = {key.value: value for key, value in node.value if isinstance(key, yaml.ScalarNode)}
    extract = keys.get("extract")
    bare = isinstance(extract, yaml.MappingNode) and any(isinstance(v, yaml.ScalarNode) for _, v in extract.value)
    return "extract_kind" in keys or bare


def _rewrite(signature: yaml.MappingNode, lines: list[str]) -> list[str]:
    pairs = [(key, value) for key, value in signature.value if key.value in ("extract", "extract_kind")]
    spans = [(key.start_mark.line, _end_line(value)) for key, value in pairs]
    if any(lines[first][: key.start_mark.column].strip() for (first, _), (key, _) in zip(spans, pairs)):
        raise MigrationError(f"line {spans[0][0] + 1}: extract is not on a line of its own; edit this file by hand")
    indent = " " * pairs[0][0].start_mark.column
    block = [f"{indent}extract:\n", *(f"{indent}  {name}: {{{body}}}\n" for name, body in _new_items(pairs, lines))]
    for first, end in sorted(spans, reverse=True):
        lines = lines[:first] + (block if first == spans[0][0] else []) + lines[end:]
    return lines


def _end_line(value: yaml.Node) -> int:
    """The line after `value`. A block mapping's own end mark is the next key's: its last value ends it."""
    if isinstance(value, yaml.MappingNode) and not value.flow_style and value.value:
        return max(_end_line(item) for _, item in value.value)
    mark = value.end_mark
    return int(mark.line if mark.column == 0 else mark.line + 1)


def _new_items(pairs: list[tuple[yaml.Node, yaml.Node]], lines: list[str]) -> Iterator[tuple[str, str]]:
    regexes: dict[str, str] = {}
    kinds: dict[str, str] = {}
    for key, value in pairs:
        if not isinstance(value, yaml.MappingNode):
            raise MigrationError(f"line {key.start_mark.line + 1}: {key.value} is not a mapping")
        for name, item in value.value:
            if key.value == "extract_kind":
                kinds[name.value] = item.value
            elif isinstance(item, yaml.ScalarNode):
                regexes[name.value] = _flow_scalar(item, lines)
            else:
                raise MigrationError(f"line {name.start_mark.line + 1}: extract '{name.value}' mixes old and new forms")
    for name in [*regexes, *(name for name in kinds if name not in regexes)]:
        parts = [f"regex: {regexes[name]}"] if name in regexes else []
        kind = kinds.get(name, KINDLESS)
        parts += [f"kind: {kind}"] if kind != KINDLESS or name not in regexes else []
        yield name, ", ".join(parts)


def _flow_scalar(node: yaml.ScalarNode, lines: list[str]) -> str:
    """A scalar that is safe inside `{...}`: as it was written when quoted on one line, else re-quoted."""
    start, end = node.start_mark, node.end_mark
    if node.style in ("'", '"') and start.line == end.line:
        return lines[start.line][start.column : end.column]
    value = str(node.value)
    if "\n" not in value:
        return "'" + value.replace("'", "''") + "'"
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a double-quoted YAML scalar


def _converted(data: Any) -> Any:
    """What the data must become: the same conversion on parsed values, to check the text rewrite against."""
    if isinstance(data, list):
        return [_converted(item) for item in data]
    if not isinstance(data, dict):
        return data
    out = {key: _converted(value) for key, value in data.items() if key != "extract_kind"}
    kinds = data.get("extract_kind") or {}
    extract = data.get("extract") or {}
    if kinds or any(isinstance(value, str) for value in extract.values()):
        new: dict[str, Any] = {}
        for name, regex in extract.items():
            new[name] = {"regex": regex} | ({"kind": kinds[name]} if kinds.get(name, KINDLESS) != KINDLESS else {})
        new |= {name: {"kind": kind} for name, kind in kinds.items() if name not in extract}
        out["extract"] = new
    return out
