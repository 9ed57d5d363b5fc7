"""Read log sources in bounded chunks: files, gzip files and standard input."""

from __future__ import annotations

import os
import stat
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

CHUNK_SIZE = 8 << 20
GZIP_MAGIC = b"\x1f\x8b"


class SourceError(Exception):
    """A source that cannot be read (further); str() is one line for the user."""


def display_name(path: str) -> str:
    return "<stdin>" if path == "-" else path


def expand_directories(paths: list[str]) -> tuple[list[str], list[str]]:
    """The paths with each directory replaced by the files under it (sorted, hidden ones left out),
    and a one-line error for each directory that holds none: `triage scan logs/` reads every rank's
    log, as `rg` would."""
    expanded: list[str] = []
    errors: list[str] = []
    for path in paths:
        if path == "-" or not os.path.isdir(path):
            expanded.append(path)
            continue
        files = sorted(_files_under(Path(path)))
        if not files:
            errors.append(f"{path}: a directory with no files in it")
        expanded += files
    return expanded, errors


def _files_under(directory: Path) -> Iterator[str]:
    for root, directories, files in os.walk(directory):
        directories[:] = [name for name in directories if not name.startswith(".")]
        for name in files:
            full = os.path.join(root, name)
            if not name.startswith(".") and os.path.isfile(full):
                yield full


def is_gzip(path: str | Path) -> bool:
    """Whether the regular file `path` starts like a gzip stream (False when it cannot be read).

    Never opens a pipe or FIFO: peeking at one would consume the bytes a later read needs.
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as handle:
            return handle.read(2) == GZIP_MAGIC
    except OSError:
        return False


def read_chunks(path: str, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
    """Yield the bytes of `path` ('-' for stdin) chunk by chunk, gunzipped when they are gzip.

    The source is opened once and sniffed on that same handle, so pipes, FIFOs and process
    substitution (`<(zcat x.gz)`) stream like files. Raises SourceError with one clear line for a
    missing, unreadable or corrupt source; chunks already yielded stay valid, so what was found
    before the fault can still be reported.
    """
    if path == "-":
        yield from _sniffed(sys.stdin.buffer, path, chunk_size)
        return
    if os.path.isdir(path):
        raise SourceError(f"{path}: is a directory (give the log files inside it, e.g. {path}/*.log)")
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below; a FIFO blocks here until a writer opens it
    except FileNotFoundError:
        raise SourceError(f"{path}: no such file") from None
    except PermissionError:
        raise SourceError(f"{path}: permission denied") from None
    except OSError as exc:
        raise SourceError(f"{path}: {exc.strerror or exc}") from None
    with handle:
        yield from _sniffed(handle, path, chunk_size)


def _sniffed(handle: BinaryIO, path: str, chunk_size: int) -> Iterator[bytes]:
    try:
        first = handle.read(chunk_size)
        if first.startswith(GZIP_MAGIC):
            yield from _gunzip(first, handle, path, chunk_size)
            return
        while first:
            yield first
            first = handle.read(chunk_size)
    except OSError as exc:
        raise SourceError(f"{display_name(path)}: {exc.strerror or exc}") from None


def _gunzip(first: bytes, handle: BinaryIO, path: str, chunk_size: int) -> Iterator[bytes]:
    """Decompress as the bytes arrive, so that a truncated stream still yields every line before the cut.

    Output comes at most `chunk_size` at a time, however small the input: a gzip bomb costs time,
    never memory. Concatenated members (`cat a.gz b.gz`) are read one after the other.
    """
    decompressor = zlib.decompressobj(wbits=31)
    member_open = False
    data = first
    while data:
        try:
            while data:
                member_open = True
                out = decompressor.decompress(data, chunk_size)
                if out:
                    yield out
                data = decompressor.unconsumed_tail
                if decompressor.eof:  # the next member, if any, starts right after this one
                    data, decompressor, member_open = decompressor.unused_data, zlib.decompressobj(wbits=31), False
        except zlib.error as exc:
            raise SourceError(f"{display_name(path)}: corrupt gzip ({exc}); scanned what could be read") from None
        data = handle.read(chunk_size)
    if member_open:
        if tail := decompressor.flush():
            yield tail
        raise SourceError(f"{display_name(path)}: truncated gzip; scanned what could be read")
