"""A KB directory's entries as loaded and validated, cached by what its files hold.

Reading the shipped KB's YAML, validating every entry and checking every regex for backtracking
takes most of a second, and a cold build (a contributor's edit, a new KB set) used to pay it for
every directory, the shipped one included. Each directory's load is kept as data (the entries'
validated fields, their YAML line numbers, the errors of the files that were skipped) under a hash
of the directory, its entry files and the code that checks them; reading it back validates the fields again
but compiles no regex (see `triage.kb.models.VALIDATED`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from triage.kb import loader, models, regex_safety
from triage.kb.cache_files import by_content, code_version, new_digest
from triage.kb.loader import MAX_ENTRY_BYTES, KBError, LoadedEntry, entry_files
from triage.kb.models import VALIDATED, Entry

Loaded = tuple[list[LoadedEntry], list[KBError]]
"""A directory's entries, in file order, and the errors of the files skipped."""


def loaded(directory: Path, load: Callable[[Path], Loaded]) -> Loaded:
    """`load(directory)`, or what it gave for the same files before."""
    digest = new_digest(f"{directory}\n".encode())  # error messages name other files by their path
    digest.update(code_version(loader, models, regex_safety))
    for path in entry_files(directory):
        try:
            with path.open("rb") as handle:
                head = handle.read(MAX_ENTRY_BYTES + 1)  # a larger file is refused, however large
        except OSError:
            head = b"\0unreadable"
        digest.update(f"{path.relative_to(directory)}\0".encode() + new_digest(head).digest())

    def build() -> bytes:
        entries, errors = load(directory)
        return json.dumps(
            {
                "entries": [
                    [
                        str(item.path.relative_to(directory)),
                        item.entry.model_dump(mode="json"),
                        list(item.line_of.items()),
                    ]
                    for item in entries
                ],
                "errors": [[str(error.path.relative_to(directory)), error.line, error.message] for error in errors],
            }
        ).encode()

    def decode(content: bytes) -> Loaded:
        data = json.loads(content)
        entries = [
            LoadedEntry(
                Entry.model_validate(fields, context={VALIDATED: True}),
                directory / rel,
                {tuple(loc): line for loc, line in lines},
            )
            for rel, fields, lines in data["entries"]
        ]
        return entries, [KBError(directory / rel, line, message) for rel, line, message in data["errors"]]

    return by_content("entries", digest.digest(), build, decode)
