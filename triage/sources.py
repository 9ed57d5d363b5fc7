"""Read log sources in bounded chunks: files, gzip files and standard input."""

from __future__ import annotations

import gzip
import os
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

CHUNK_SIZE = 8 << 20
GZIP_CHUNK_SIZE = 1 << 20
"""Smaller for gzip: a truncated stream loses the chunk being read, so keep that loss small."""


class SourceError(Exception):
    """A source that cannot be read (further); str() is one line for the user."""


def display_name(path: str) -> str:
    return "<stdin>" if path == "-" else path


GZIP_MAGIC = b"\x1f\x8b"


def is_gzip(path: str | Path) -> bool:
    """Whether `path` starts like a gzip stream (False when it cannot be read)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(2) == GZIP_MAGIC
    except OSError:
        return False


def read_chunks(path: str, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
    """Yield the bytes of `path` ('-' for stdin) chunk by chunk.

    Raises SourceError with one clear line for a missing, unreadable or corrupt source; chunks
    already yielded stay valid, so what was found before the fault can still be reported.
    """
    if path == "-":
        stream = sys.stdin.buffer
        while chunk := stream.read(chunk_size):
            yield chunk
        return
    file_path = Path(path)
    if file_path.is_dir():
        raise SourceError(f"{path}: is a directory (give the log files inside it, e.g. {path}/*.log)")
    if not file_path.exists():
        raise SourceError(f"{path}: no such file")
    if not os.access(file_path, os.R_OK):
        raise SourceError(f"{path}: permission denied")
    try:
        compressed = is_gzip(file_path)
        opener = gzip.open if compressed else open
        size = min(chunk_size, GZIP_CHUNK_SIZE) if compressed else chunk_size
        with opener(file_path, "rb") as handle:  # type: ignore[operator]
            while chunk := handle.read(size):
                yield chunk
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise SourceError(f"{path}: corrupt or truncated gzip ({exc}); scanned what could be read") from None
    except OSError as exc:
        raise SourceError(f"{path}: {exc.strerror or exc}") from None
