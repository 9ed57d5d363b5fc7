"""Read log sources in bounded chunks: files, gzip files and standard input."""

from __future__ import annotations

import codecs
import os
import re
import stat
import sys
import zlib
from collections.abc import Iterator
from itertools import chain
from pathlib import Path
from typing import BinaryIO

CHUNK_SIZE = 1 << 20
"""A read this size lies in a core's L2 cache while the scan walks it: with 8 MiB reads, the copy
out of the page cache and the walk each went to memory, and a 512 MiB scan took 10-20% longer."""
SNIFF_BYTES = 64 << 10
"""How much of a source's start tells a text log from binary data."""
GZIP_MAGIC = b"\x1f\x8b"
XZ_MAGIC = b"\xfd7zXZ\x00"
BZIP2_MAGIC = re.compile(rb"BZh[1-9]1AY&SY")
"""bzip2's header, its block size and its first block's magic (pi's digits): no log starts so."""
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
UTF16_CODECS = {codecs.BOM_UTF16_LE: "utf-16-le", codecs.BOM_UTF16_BE: "utf-16-be"}

_NOT_CONTROL_BYTES = bytes(byte for byte in range(256) if not (byte < 0x20 or byte == 0x7F) or byte in b"\0\t\r\x1b")
"""For `bytes.translate(None, ...)`: deleting these leaves a line's control bytes (but NUL, tab, CR
and ESC: padding, layout, progress bars and colours)."""
BINARY_SHARE = 20
"""A line is binary data when one byte in this many (or more) is a control byte and it decodes as
neither UTF-8 nor GBK: random bytes hold about one in nine, text none."""


def binary_line(raw: bytes) -> bool:
    """Whether a line is binary data rather than text (a core file, an archive or a model fed as a
    log): its words are chance bytes that a pattern or the safety net must not take for an error.

    NULs do not count: a log rotated with copytruncate is padded with NULs before its next real line.
    A line of UTF-8 or GBK text with control bytes (a spinner's backspaces) is still text.
    """
    controls = len(raw.translate(None, _NOT_CONTROL_BYTES))
    if controls < 2 or controls * BINARY_SHARE < len(raw):
        return False
    return as_text(raw) is None


def as_text(raw: bytes) -> str | None:
    """A line's bytes read as UTF-8, else GBK (Chinese-locale CANN logs); None when neither reads them:
    the scanner then takes them for Latin-1 text, or for binary data (see `binary_line`)."""
    for encoding in ("utf-8", "gbk"):
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            continue
    return None


def binary_data(sample: bytes) -> bool:
    """Whether a source whose first bytes are `sample` is binary data (a core file, an archive, a
    model), not a log: most of its bytes lie on binary lines."""
    binary = sum(len(raw) for raw in sample.split(b"\n") if binary_line(raw))
    return binary * 2 > len(sample)


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


def unfollowable(path: str | Path) -> str | None:
    """Why the regular file `path` is no growing text log to follow: "compressed" (a rotated gzip, xz,
    bzip2 or zstd file: it no longer grows, and raw it reads as nothing) or "binary data"; None when
    it may be followed, or cannot be read.

    Never opens a pipe or FIFO: peeking at one would consume the bytes a later read needs.
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
    except OSError:
        return None
    kind = _start_kind(path)
    return kind if kind != "utf-16" else None


def _start_kind(path: str | Path) -> str | None:
    """What a file's first bytes say it is, when not plain text: "compressed", "utf-16" or "binary
    data" (None as well when it cannot be read)."""
    try:
        with open(path, "rb") as handle:
            start = handle.read(SNIFF_BYTES)
    except OSError:
        return None
    return _kind_of(start)


def _kind_of(start: bytes) -> str | None:
    """What a source whose first bytes are `start` is, when not plain text (see `_start_kind`)."""
    if _compression(start) is not None:
        return "compressed"
    if start.startswith(UTF16_BOMS):
        return "utf-16"
    return "binary data" if binary_data(start) else None


def _compression(start: bytes) -> str | None:
    if start.startswith(GZIP_MAGIC):
        return "gzip"
    if start.startswith(XZ_MAGIC):
        return "xz"
    if BZIP2_MAGIC.match(start):
        return "bzip2"
    return "zstd" if start.startswith(ZSTD_MAGIC) else None


def read_chunks(path: str, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
    """Yield the bytes of `path` ('-' for stdin) chunk by chunk, gunzipped when they are gzip.

    The source is opened once and sniffed on that same handle, so pipes, FIFOs and process
    substitution (`<(zcat x.gz)`) stream like files. Raises SourceError with one clear line for a
    missing, unreadable or corrupt source; chunks already yielded stay valid, so what was found
    before the fault can still be reported.
    """
    if path == "-":
        yield from read_stream(sys.stdin.buffer, path, chunk_size)
        return
    with _open(path) as handle:
        yield from read_stream(handle, path, chunk_size)


Read = tuple[bytes, int]
"""A read and where its last whole line ends in it: what to pass to `Scanner.feed` as data and end."""


def read_to_line_ends(path: str, chunk_size: int = CHUNK_SIZE) -> Iterator[Read]:
    """The reads of `read_chunks`, each with where its last whole line ends. A plain regular file is
    read again from there (see `reads_to_line_ends`); any other source's reads end where they end,
    and the scanner carries a cut line over to the next."""
    if path == "-" or not os.path.isfile(path):
        yield from ((chunk, len(chunk)) for chunk in read_chunks(path, chunk_size))
        return
    with _open(path) as handle:
        try:
            plain = _kind_of(handle.read(SNIFF_BYTES)) is None  # sniffed on this handle: opened once
            handle.seek(0)
            if plain:
                yield from reads_to_line_ends(handle, None, chunk_size)
            else:
                yield from ((chunk, len(chunk)) for chunk in read_stream(handle, path, chunk_size))
        except OSError as exc:
            raise SourceError(f"{path}: {exc.strerror or exc}") from None


def reads_to_line_ends(handle: BinaryIO, limit: int | None, chunk_size: int = CHUNK_SIZE) -> Iterator[Read]:
    """Reads of a seekable plain file from where the handle stands (its start drops a UTF-8 BOM, as
    `read_stream` does), `limit` bytes in all (None: to its end). A read that ends inside a line is
    paired with its last line end, and the file is read again from there: the cut line is not
    carried over and joined to the next read, a copy of the whole read."""
    at_file_start = handle.tell() == 0
    while limit is None or limit > 0:
        chunk = handle.read(chunk_size if limit is None else min(chunk_size, limit))
        if not chunk:
            return
        text = chunk.removeprefix(codecs.BOM_UTF8) if at_file_start else chunk
        at_file_start = False
        whole = len(text) if len(chunk) == limit else text.rfind(b"\n") + 1 or len(text)
        if whole < len(text):
            handle.seek(whole - len(text), os.SEEK_CUR)
        if limit is not None:
            limit -= len(chunk) - (len(text) - whole)
        yield text, whole


def _open(path: str) -> BinaryIO:
    if os.path.isdir(path):
        raise SourceError(f"{path}: is a directory (give the log files inside it, e.g. {path}/*.log)")
    try:
        return open(path, "rb")  # noqa: SIM115 - the caller closes it; a FIFO blocks here until a writer opens it
    except FileNotFoundError:
        raise SourceError(f"{path}: no such file") from None
    except PermissionError:
        raise SourceError(f"{path}: permission denied") from None
    except OSError as exc:
        raise SourceError(f"{path}: {exc.strerror or exc}") from None


def read_stream(handle: BinaryIO, path: str, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
    """The bytes of an open source, as `read_chunks` yields them: sniffed on this handle for gzip,
    UTF-16 and binary data."""
    try:
        first = handle.read(max(chunk_size, 16))  # enough to tell every format apart
        kind = _compression(first)
        if kind == "zstd":  # not in Python's standard library before 3.14
            name = display_name(path)
            raise SourceError(f"{name}: zstd-compressed; decompress it first: zstd -dc {name} | triage scan")
        chunks = (
            _gunzip(first, handle, path, chunk_size)
            if kind == "gzip"
            else _unpacked(first, handle, path, chunk_size, kind)
            if kind
            else _plain(first, handle, chunk_size)
        )
        del first  # the reader owns it now: held here, a whole chunk would stay alive for the entire read
        for number, chunk in enumerate(chunks):
            if number == 0 and chunk.startswith(UTF16_BOMS):
                yield from _as_utf8(chunk, chunks)
                return
            if number == 0 and binary_data(chunk[:SNIFF_BYTES]):
                raise SourceError(f"{display_name(path)}: binary data, not a text log; skipped")
            yield chunk.removeprefix(codecs.BOM_UTF8) if number == 0 else chunk
    except OSError as exc:
        raise SourceError(f"{display_name(path)}: {exc.strerror or exc}") from None


def _as_utf8(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    """A UTF-16 log (Windows PowerShell's `>` and `Tee-Object` write one), as UTF-8, chunk by chunk:
    read as it is, its every other byte a NUL, no pattern would match a word of it."""
    decoder = codecs.getincrementaldecoder("utf-16")(errors="replace")
    for chunk in chain([first], rest):
        if text := decoder.decode(chunk):
            yield text.encode("utf-8")
    if tail := decoder.decode(b"", final=True):
        yield tail.encode("utf-8")


class FollowedText:
    """A followed file's bytes as the scanner reads them, read after read: as `read_stream` reads a
    whole file, a UTF-8 BOM at the start is dropped (else line 1 starts with U+FEFF and a pattern
    anchored at `^` misses it) and UTF-16 text is re-encoded as UTF-8, a code unit split between two
    reads included."""

    def __init__(self) -> None:
        self._decoder: codecs.IncrementalDecoder | None = None

    def join_at(self, head: bytes) -> None:
        """The file is followed from its end: `head` (its first bytes) says whether it is UTF-16."""
        self._decoder = _utf16_decoder(head)

    def recode(self, chunk: bytes, *, from_start: bool) -> bytes:
        """The bytes to scan for `chunk`, read from the file's start when `from_start` (its first read,
        or the first after a truncation)."""
        if from_start:
            self._decoder = _utf16_decoder(chunk)
        if self._decoder is None:
            return chunk.removeprefix(codecs.BOM_UTF8) if from_start else chunk
        text = self._decoder.decode(chunk)
        return (text.removeprefix("\ufeff") if from_start else text).encode("utf-8")


def _utf16_decoder(head: bytes) -> codecs.IncrementalDecoder | None:
    codec = UTF16_CODECS.get(head[:2])
    return codecs.getincrementaldecoder(codec)(errors="replace") if codec else None


def _plain(first: bytes, handle: BinaryIO, chunk_size: int) -> Iterator[bytes]:
    while first:
        yield first
        first = handle.read(chunk_size)


def read_in_one_pass(path: str) -> bool:
    """Whether a file must be read from its start by one reader, not in parts from any offset: a
    compressed stream, binary data (named and skipped) or UTF-16 text (re-encoded as it is read; see
    `read_stream`). False when it cannot be read."""
    return _start_kind(path) is not None


def _unpacked(first: bytes, handle: BinaryIO, path: str, chunk_size: int, kind: str) -> Iterator[bytes]:
    """An xz or bzip2 stream, read as `_gunzip` reads gzip: at most `chunk_size` out at a time,
    concatenated streams one after the other, a cut stream yielding every line before the cut."""
    import bz2  # noqa: PLC0415 - only for the few logs that come so compressed
    import lzma  # noqa: PLC0415

    make = lzma.LZMADecompressor if kind == "xz" else bz2.BZ2Decompressor
    decompressor, data = make(), first
    while True:
        try:
            out = decompressor.decompress(data, max_length=chunk_size)
        except (lzma.LZMAError, OSError) as exc:
            raise SourceError(f"{display_name(path)}: corrupt {kind} ({exc}); scanned what could be read") from None
        if out:
            yield out
        if decompressor.eof:  # the next stream, if any, starts right after this one (xz pads with NULs)
            data = decompressor.unused_data.lstrip(b"\0") or handle.read(chunk_size).lstrip(b"\0")
            if not data:
                return
            decompressor = make()
        elif decompressor.needs_input:
            data = handle.read(chunk_size)
            if not data:
                raise SourceError(f"{display_name(path)}: truncated {kind}; scanned what could be read")
        else:
            data = b""  # output is still waiting inside the decompressor


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
