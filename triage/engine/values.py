"""Read extracted values: sizes such as '2.00 GiB' become bytes so that conditions can compare them."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from triage.kb.models import ExtractKind

_SIZE = re.compile(r"^\s*([\d.]+)\s*([KMGTP]?)(i?)B?\s*$", re.IGNORECASE)
_POWERS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5}


def parse_value(raw: str, kind: ExtractKind) -> int | float | str | None:
    """The typed value, or None when `raw` cannot be read as `kind`."""
    raw = raw.strip()
    try:
        if kind == "int":
            return int(raw, 0)
        if kind == "float":
            value = float(raw)
            return value if math.isfinite(value) else None  # "1e999", a run of digits: no measure
    except ValueError:
        return None
    if kind == "size":
        match = _SIZE.match(raw)
        if not match:
            return None
        number, unit, _binary = match.groups()
        try:
            # Framework messages say "MB" and mean MiB, as torch_npu's allocator does.
            size = float(number) * 1024 ** _POWERS[unit.upper()]
        except ValueError:
            return None
        return int(size) if math.isfinite(size) else None
    return raw


def human_size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.2f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.2f} TiB"
