"""Scan whole sources through one scanner: the I/O edge shared by `scan`, `eval` and the TUI."""

from __future__ import annotations

from collections.abc import Callable

from triage.engine.scanner import Scanner
from triage.sources import SourceError, display_name, read_to_line_ends

ProgressCallback = Callable[[str, int], None]
"""Called with (source name, bytes read so far from it) after each chunk."""


def scan_sources(
    scanner: Scanner, paths: list[str], *, progress: ProgressCallback | None = None, jobs: int = 1
) -> list[str]:
    """Feed every path (or '-' for stdin) to `scanner`; returns one-line errors for failed sources.

    A source that fails part-way keeps what it contributed: the scanner has already seen it. With
    jobs > 1, plain files big enough together (one big file split, or the files of a multi-rank
    job) are scanned in that many worker processes, and absorbed in the order given (the same result,
    but for which lines of a shape are listed: see `triage.parallel`).
    """
    from triage.parallel import parallel_plan, scan_parallel

    errors: list[str] = []
    plan = parallel_plan(paths, jobs)
    # Workers start on every planned file at once; the loop below takes their results in the
    # order given, scanning stdin and gzip files itself in between.
    planned = scan_parallel(scanner, plan, jobs, progress) if plan else iter(())
    for path in paths:
        name = display_name(path)
        if path in plan:
            _, failed = next(planned)
            for error in failed:
                errors.append(error)
                scanner.note_error(error)
            if progress is not None:
                progress(name, plan[path][-1][1])
            continue
        done = 0
        try:
            for chunk, end in read_to_line_ends(path):
                scanner.feed(chunk, name, end=end)
                done += end
                if progress is not None:
                    progress(name, done)
        except SourceError as exc:
            errors.append(str(exc))
            scanner.note_error(str(exc))
        finally:
            scanner.finish(name)
    return errors
