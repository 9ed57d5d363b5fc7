"""Load KB entries from YAML safely, with every error naming its file and line.

A user KB directory is untrusted input: besides the safe loader (no Python tags), a file is refused
when it is larger than MAX_ENTRY_BYTES or uses YAML aliases (a 1 KB "billion laughs" expands to
gigabytes), and every regex in it must pass the catastrophic-backtracking check. Together these
bound the time and memory one load can take by the file's size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable, Iterable
from typing import Any

import yaml
from pydantic import ValidationError

from triage.kb.cache_files import enabled as cache_enabled
from triage.kb.models import Entry, Signature
from triage.kb.paths import CASES_FILE, CODES_FILE, NEIGHBOURS_FILE
from triage.kb.regex_safety import unsafe_reason

try:  # libyaml's parser is several times faster; both are safe loaders.
    _BaseLoader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - pyyaml built without libyaml
    _BaseLoader = yaml.SafeLoader


def safe_yaml(text: str) -> Any:
    """YAML as `yaml.safe_load` reads it, by libyaml where it is built in (the corpus's cases.yaml:
    1.4 s -> 0.2 s)."""
    return yaml.load(text, Loader=_BaseLoader)  # noqa: S506 - a safe loader either way


def yaml_problem(exc: yaml.YAMLError) -> str:
    """What is wrong with a YAML text, on one line ("did not find expected node content, line 2"):
    PyYAML's own message spans several lines, with the offending text quoted."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f", line {mark.line + 1}" if mark else ""
        return f"{exc.problem or exc.context}{where}"
    return " ".join(str(exc).split())


MAX_ENTRY_BYTES = 256 << 10
"""Far above the largest shipped entry (8 KB); a bigger file is a mistake or an attack."""


class KBError(Exception):
    """A KB file that cannot be used; str() is one line: `path:line: message`."""

    def __init__(self, path: Path | str, line: int | None, message: str) -> None:
        self.path = Path(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line else str(self.path)
        super().__init__(f"{where}: {message}")


class _UniqueKeyLoader(_BaseLoader):  # type: ignore[misc]
    """A safe loader that refuses duplicate mapping keys instead of silently keeping the last."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key '{key}' (first on line {seen[key]})", key_node.start_mark
                )
            seen[key] = key_node.start_mark.line + 1
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    lambda loader, node: loader.construct_mapping(node, deep=True),
)


@dataclass(frozen=True)
class LoadedEntry:
    entry: Entry
    path: Path
    line_of: dict[tuple[Any, ...], int] = field(default_factory=dict, compare=False, repr=False)
    """Line numbers of YAML nodes by their path in the document, for validators that report file:line."""

    def line(self, *loc: Any) -> int:
        """The line of the deepest known node along `loc` (1 when unknown)."""
        for end in range(len(loc), -1, -1):
            if loc[:end] in self.line_of:
                return self.line_of[loc[:end]]
        return 1


@dataclass
class KnowledgeBase:
    entries: dict[str, Entry]
    sources: dict[str, LoadedEntry]
    neighbours: list[tuple[str, str, str]] = field(default_factory=list)
    """(category, label, line) rows from each dir's neighbours file."""
    codes: list[tuple[str, str, str]] = field(default_factory=list)
    """(code, category, meaning) rows from each dir's codes file, later dirs first (they override)."""
    layer_of: dict[str, int] = field(default_factory=dict)
    """The position of each entry's directory among the loaded ones (0: the first, the shipped KB
    where it is loaded): the compiled KB keeps each directory's signatures together."""
    cases: list[tuple[str, ...]] = field(default_factory=list)
    """(label, thread URL, root cause, confirmed fix or "", stack) rows from each dir's cases file."""
    overridden: list[tuple[Entry, int]] = field(default_factory=list)
    """(entry, layer) of each entry a later directory replaced by id: the compiled KB keeps its
    signatures in place, switched off, so that its directory's compiled databases still serve."""

    def __len__(self) -> int:
        return len(self.entries)

    def add(self, loaded: LoadedEntry, layer: int) -> None:
        """Put in an entry of the directory at `layer`. One that replaces an entry of an earlier
        directory by id keeps that entry as overridden; the same file put in again keeps its place."""
        entry_id = loaded.entry.id
        known = self.sources.get(entry_id)
        if known is not None and known.path.resolve() == loaded.path.resolve():
            layer = self.layer_of[entry_id]
        elif known is not None:
            self.overridden.append((self.entries[entry_id], self.layer_of[entry_id]))
        self.entries[entry_id] = loaded.entry
        self.sources[entry_id] = loaded
        self.layer_of[entry_id] = layer

    def get(self, entry_id: str) -> Entry | None:
        return self.entries.get(entry_id)


def parse_yaml(text: str, path: Path) -> tuple[Any, dict[tuple[Any, ...], int]]:
    """Parse one YAML document; returns the data and the line of every node by its path."""
    node, data = compose_yaml(text, path)
    lines: dict[tuple[Any, ...], int] = {}
    if node is not None:
        _index_lines(node, (), lines)
    return data, lines


def compose_yaml(text: str, path: Path) -> tuple[yaml.Node | None, Any]:
    """One YAML document as its node tree (where each value was written) and its data.

    Refuses aliases and duplicate keys (KBError); a document nested thousands deep raises RecursionError.
    """
    try:
        loader = _UniqueKeyLoader(text)
        try:
            node = loader.get_single_node()
            if node is not None:
                _refuse_aliases(node, path)
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise KBError(path, line, f"invalid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise KBError(path, None, f"invalid YAML: {yaml_problem(exc)}") from None
    return node, data


def _refuse_aliases(node: yaml.Node, path: Path) -> None:
    """Raise KBError when a node is reachable twice (an alias): walked once, never expanded."""
    seen: set[int] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            raise KBError(path, current.start_mark.line + 1, "YAML aliases and anchors are not allowed in KB files")
        seen.add(id(current))
        if isinstance(current, yaml.MappingNode):
            stack += [part for pair in current.value for part in pair]
        elif isinstance(current, yaml.SequenceNode):
            stack += current.value


def _index_lines(node: yaml.Node, loc: tuple[Any, ...], out: dict[tuple[Any, ...], int]) -> None:
    out[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            child = (*loc, key_node.value)
            out[child] = key_node.start_mark.line + 1
            _index_lines(value_node, child, out)
            out[child] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _index_lines(item, (*loc, index), out)


def load_entry(path: Path, *, check_regexes: bool = True) -> LoadedEntry:
    """Read and validate one entry file (with `check_regexes`, refuse one whose regexes can backtrack)."""
    text = read_entry_text(path)
    try:
        return _parse_entry(text, path, check_regexes=check_regexes)
    except RecursionError:  # YAML or a regex nested thousands deep: the parsers recurse
        raise KBError(path, None, "nested too deeply; not loaded") from None


def read_entry_text(path: Path) -> str:
    """The text of an entry file, read no further than MAX_ENTRY_BYTES (KBError past it, or unreadable)."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_ENTRY_BYTES + 1)
        if len(raw) > MAX_ENTRY_BYTES:
            raise KBError(path, None, f"larger than {MAX_ENTRY_BYTES >> 10} KB; not loaded")
        return raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KBError(path, None, f"cannot read: {exc}") from None


def _parse_entry(text: str, path: Path, *, check_regexes: bool) -> LoadedEntry:
    data, lines = parse_yaml(text, path)
    if not isinstance(data, dict):
        raise KBError(path, 1, "an entry must be a YAML mapping")
    try:
        entry = Entry.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(first["loc"])
        loaded = LoadedEntry(entry=None, path=path, line_of=lines)  # type: ignore[arg-type]
        where = ".".join(str(part) for part in loc) or "entry"
        extra = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise KBError(path, loaded.line(*loc), f"{where}: {first['msg']}{extra}") from None
    loaded = LoadedEntry(entry=entry, path=path, line_of=lines)
    if check_regexes:
        _refuse_unsafe_regexes(loaded)
    return loaded


def signature_locations(entry: Entry) -> list[tuple[tuple[Any, ...], Signature]]:
    """Every signature of `entry` (its own and its causes' evidence) with its path in the document."""
    found: list[tuple[tuple[Any, ...], Signature]] = [(("signatures", i), s) for i, s in enumerate(entry.signatures)]
    for c, cause in enumerate(entry.causes):
        found += [(("causes", c, "evidence", i), s) for i, s in enumerate(cause.evidence)]
    return found


def _regex_locations(signature: Signature) -> list[tuple[tuple[Any, ...], str]]:
    """Every user regex of one signature (its own, `exclude` and `extract`), by its path in the signature."""
    found: list[tuple[tuple[Any, ...], str]] = [(("regex",), signature.regex)] if signature.regex else []
    found += [(("exclude", i), pattern) for i, pattern in enumerate(signature.exclude)]
    found += [(("extract", name, "regex"), e.regex) for name, e in signature.extract.items() if e.regex is not None]
    return found


def entry_regexes(entry: Entry) -> list[tuple[tuple[Any, ...], str]]:
    """Every user regex of `entry` (see `signature_locations`), by its path in the document."""
    return [
        ((*loc, *sub), pattern)
        for loc, signature in signature_locations(entry)
        for sub, pattern in _regex_locations(signature)
    ]


def _refuse_unsafe_regexes(loaded: LoadedEntry) -> None:
    # Checked at every load, not only by `kb validate`: one such pattern can stall a scan on a short line.
    for path, pattern in entry_regexes(loaded.entry):
        reason = unsafe_reason(pattern)
        if reason:
            raise KBError(loaded.path, loaded.line(*path), f"{pattern!r}: {reason}")


def entry_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*.yaml") if p.is_file() and not p.name.startswith("."))


def load_kb(dirs: Iterable[Path], *, strict: bool = True) -> tuple[KnowledgeBase, list[KBError]]:
    """Load entries from `dirs` in order; a later dir's entry replaces one with the same id.

    Within one dir a duplicate id is an error. With strict=False a bad file is skipped and reported
    in the returned error list, so one malformed user entry cannot take the whole tool down.
    """
    kb = KnowledgeBase({}, {})
    errors: list[KBError] = []
    for layer, directory in enumerate(dirs):
        if not directory.is_dir():
            missing = KBError(directory, None, "KB directory does not exist")
            if strict:
                raise missing
            errors.append(missing)
            continue
        loaded_here, errors_here = _entries_of(directory)
        if strict and errors_here:
            raise errors_here[0]
        errors += errors_here
        for loaded in loaded_here:
            kb.add(loaded, layer)
        kb.neighbours += read_table(directory / NEIGHBOURS_FILE)
        kb.codes = read_table(directory / CODES_FILE) + kb.codes
        kb.cases += read_rows(directory / CASES_FILE, 5)
    return kb, errors


def _entries_of(directory: Path) -> tuple[list[LoadedEntry], list[KBError]]:
    if not cache_enabled():
        return _load_dir(directory)
    from triage.kb import dir_cache  # it imports this module

    return dir_cache.loaded(directory, _load_dir)


def _load_dir(directory: Path) -> tuple[list[LoadedEntry], list[KBError]]:
    """Every entry of one directory, in file order, and an error for each file that is skipped."""
    loaded_here: list[LoadedEntry] = []
    errors: list[KBError] = []
    seen_here: dict[str, Path] = {}
    for path in entry_files(directory):
        try:
            loaded = load_entry(path)
            entry = loaded.entry
            if entry.id in seen_here:
                raise KBError(path, loaded.line("id"), f"duplicate id '{entry.id}' (also in {seen_here[entry.id]})")
            if path.stem != entry.id:
                raise KBError(path, loaded.line("id"), f"file name '{path.stem}' differs from id '{entry.id}'")
        except KBError as exc:
            errors.append(exc)
            continue
        seen_here[entry.id] = path
        loaded_here.append(loaded)
    return loaded_here, errors


def report_skipped(errors: Iterable[object], warn: Callable[[str], None]) -> None:
    """Say each entry (or KB dir) a non-strict load skipped, in the words every face uses."""
    for error in errors:
        warn(f"warning: skipped KB entry: {error}")


def read_table(path: Path) -> list[tuple[str, str, str]]:
    """Rows of a three-column tab-separated KB table; a missing file is none, a malformed row is skipped."""
    return [(row[0], row[1], row[2]) for row in read_rows(path, 3)]


def read_rows(path: Path, columns: int) -> list[tuple[str, ...]]:
    """Rows of a tab-separated KB table of `columns` columns (the last may hold tabs); a missing file
    is none, a malformed row is skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    rows = []
    for line in text.splitlines():
        parts = line.split("\t", columns - 1)
        if len(parts) == columns and not line.startswith("#"):
            rows.append(tuple(parts))
    return rows
