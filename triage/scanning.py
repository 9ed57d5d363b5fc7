"""Scan whole sources through one scanner: the I/O edge shared by `scan`, `eval` and the TUI."""

from __future__ import annotations

from collections.abc import Callable

from triage.engine.scanner import Scanner
from triage.sources import SourceError, display_name, read_chunks

ProgressCallback = Callable[[str, int], None]
"""Called with (source name, bytes read so far from it) after each chunk."""


def scan_sources(
    scanner: Scanner, paths: list[str], *, progress: ProgressCallback | None = None, jobs: int = 1
) -> list[str]:
    """Feed every path (or '-' for stdin) to `scanner`; returns one-line errors for failed sources.

    A source that fails part-way keeps what it contributed: the scanner has already seen it. With
    jobs > 1 a big plain file is split across that many worker processes (same result).
    """
    from triage.parallel import can_split, scan_file_parallel

    errors: list[str] = []
    for path in paths:
        name = display_name(path)
        done = 0
        if can_split(path, jobs):
            try:
                scan_file_parallel(scanner, path, name, jobs)
                continue
            except OSError as exc:
                errors.append(f"{path}: {exc.strerror or exc}")
                scanner.note_error(errors[-1])
                continue
        try:
            for chunk in read_chunks(path):
                scanner.feed(chunk, name)
                done += len(chunk)
                if progress is not None:
                    progress(name, done)
        except SourceError as exc:
            errors.append(str(exc))
            scanner.note_error(str(exc))
        finally:
            scanner.finish(name)
    return errors
