"""Convert the fault knowledge of Huawei MindCluster's fault diagnosis (`ascend-fd`) into KB entries.

The source is `ascend_fd/configuration/kg-config.json` of the user's own installation; nothing of it
ships with triage. Its shape:

    {"knowledge-repository": {CODE: {
        "attribute": {"class", "component", "module", "cause_en", "description_en", "suggestion_en": [...], ... _zh},
        "rule": [{"dst_code": CODE}],          # this fault can cause dst: becomes `related`
        "source_file": "TrainLog",             # which log family ascend-fd reads
        "regex": {"in": [kw, ...] | [[kw, ...], ...]} | {"regex": PATTERN} | {"opt": [{"all": [[kw, ...], ...]}]}}}}

`in` keywords must all appear, in order, on one line (a list of lists is an OR of such groups): each
group becomes one regex `kw1.*kw2...`, or a `text` signature for a single keyword. `opt` groups must
co-occur within a few lines, which one-line signatures cannot express: each group becomes its own
signature, so an imported entry may fire where ascend-fd would not. Hardware event codes without a
log pattern (0x81078603) match as text. Entries are `experimental`, weight 1, so curated entries
keep ranking first; the category comes from keyword rules on the fault text, then from the fault
class (Network -> hccl_timeout), else `segfault`, the catch-all for device and process crashes.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from triage.kbtools.categorize import DEFAULT_CATEGORY, category_from_text
from triage.kb.regex_safety import unsafe_reason
from triage.kbtools.writer import entry_path, write_entry

ID_PREFIX = "ascend-fd-"
CLASS_CATEGORIES = {"network": "hccl_timeout"}
_HEX_CODE = re.compile(r"0x[0-9A-Fa-f]{6,}")


class AscendFdError(Exception):
    """The file cannot be imported; str() is one line."""


@dataclass
class ImportResult:
    written: list[Path] = field(default_factory=list)
    existing: list[Path] = field(default_factory=list)
    skipped: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    """Reason -> fault codes."""


def load_kg_config(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AscendFdError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AscendFdError(f"{path}: not a JSON file: {exc}") from None
    faults = data.get("knowledge-repository") if isinstance(data, dict) else None
    if not isinstance(faults, dict):
        raise AscendFdError(f"{path}: no 'knowledge-repository' object: is this ascend-fd's kg-config.json?")
    return {code: fault for code, fault in faults.items() if isinstance(fault, dict)}


def _mapping(value: Any) -> dict[str, Any]:
    """A field that should be an object; anything else in a hand-edited file reads as empty."""
    return value if isinstance(value, dict) else {}


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def entry_id(code: str) -> str:
    return ID_PREFIX + re.sub(r"[^a-z0-9]+", "-", code.lower()).strip("-")


def keyword_groups(code: str, fault: dict[str, Any]) -> list[list[str]]:
    """Each group: keywords that must appear in order on one line."""
    rules = _mapping(fault.get("regex"))
    groups: list[list[str]] = []
    keywords = rules.get("in")
    keywords = [keywords] if isinstance(keywords, str) else _items(keywords)
    if keywords and all(isinstance(k, str) for k in keywords):
        groups.append(keywords)
    else:
        groups += [group for group in keywords if isinstance(group, list) and group]
    for option in _items(rules.get("opt")):
        groups += [group for group in _items(_mapping(option).get("all")) if isinstance(group, list) and group]
    if not groups and not rules and _HEX_CODE.fullmatch(code):
        groups.append([code])
    return [[str(k) for k in group] for group in groups]


def signatures(code: str, fault: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for group in keyword_groups(code, fault):
        if len(group) == 1:
            out.append({"text": group[0]})
        else:
            out.append({"regex": ".*".join(re.escape(keyword).replace("\\ ", " ") for keyword in group)})
    pattern = _mapping(fault.get("regex")).get("regex")
    if isinstance(pattern, str) and _usable_regex(pattern):
        out.append({"regex": pattern})
    return out


def _usable_regex(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return unsafe_reason(pattern) is None


def fixes(steps: list[str]) -> list[dict[str, Any]]:
    """One fix per numbered step ("1. ..."); unnumbered lines (often commands) belong to the step above."""
    out: list[dict[str, Any]] = []
    for raw in steps:
        text = str(raw).strip()
        if not text:
            continue
        numbered = re.match(r"^\d+[.、)]\s*", text)
        if numbered or not out:
            out.append({"title": text[numbered.end() :] if numbered else text, "description": ""})
        else:
            out[-1]["description"] = (out[-1]["description"] + "\n" + text).strip()
    for fix in out:
        if not fix["description"]:
            del fix["description"]
    return out


def category(fault: dict[str, Any]) -> str:
    attribute = _mapping(fault.get("attribute"))
    text = " ".join(
        str(attribute.get(key, "")) for key in ("cause_en", "description_en", "module", "component", "cause_zh")
    )
    text += " " + " ".join(" ".join(group) for group in keyword_groups("", fault))
    found = category_from_text(text)
    if found:
        return found
    fault_class = str(attribute.get("class", "")).lower()
    return CLASS_CATEGORIES.get(fault_class, DEFAULT_CATEGORY)


def convert(code: str, fault: dict[str, Any], known_codes: set[str], lang: str = "en") -> dict[str, Any] | str:
    """Entry data for one fault, or the reason it cannot become an entry."""
    sigs = signatures(code, fault)
    if not sigs:
        return "no log pattern (ascend-fd detects it from device state or metrics)"
    attribute = _mapping(fault.get("attribute"))
    other = "zh" if lang == "en" else "en"

    def text(key: str) -> str:
        return str(attribute.get(f"{key}_{lang}") or attribute.get(f"{key}_{other}") or "").strip()

    where = " / ".join(str(attribute[k]) for k in ("component", "module") if attribute.get(k))
    summary = text("description") or text("cause") or code
    groups = keyword_groups(code, fault)
    return {
        "id": entry_id(code),
        "title": text("cause") or code,
        "category": category(fault),
        "severity": "critical" if "hardware" in str(attribute.get("class", "")).lower() else "error",
        "status": "experimental",
        # ascend-fd's *_ERRCODE_* faults catch any error code of a component: wrappers, not causes.
        "generic": "ERRCODE" in code.upper(),
        "summary": f"{summary}\n(ascend-fd fault {code}{', ' + where if where else ''})",
        "signatures": sigs,
        "fixes": fixes(attribute.get(f"suggestion_{lang}") or attribute.get(f"suggestion_{other}") or []),
        "references": [
            {
                "document": f"MindCluster ascend-fd kg-config.json, fault {code}",
                "supports": "the fault's log keywords, description and suggestions",
            }
        ],
        "related": [
            entry_id(rule["dst_code"])
            for rule in _items(fault.get("rule"))
            if isinstance(rule, dict) and rule.get("dst_code") in known_codes
        ],
        # A synthetic line holding every keyword of the first group, in order: the entry must at
        # least find what ascend-fd finds. Regex-only faults get none, and validation says so.
        "examples": {"match": [" ".join(groups[0])]} if groups else {},
    }


def import_kg_config(config: Path, out: Path, *, lang: str = "en", force: bool = False) -> ImportResult:
    faults = load_kg_config(config)
    result = ImportResult()
    convertible: dict[str, dict[str, Any]] = {}
    known_codes = set(faults)
    for code, fault in faults.items():
        converted = convert(code, fault, known_codes, lang)
        if isinstance(converted, str):
            result.skipped[converted].append(code)
        else:
            convertible[code] = converted
    converted_ids = {entry_id(code) for code in convertible}
    for code, data in convertible.items():
        data["related"] = [rid for rid in data["related"] if rid in converted_ids]
        if entry_path(out, data).exists() and not force:
            result.existing.append(entry_path(out, data))
            continue
        try:
            result.written.append(write_entry(out, data, force=True))
        except ValidationError as exc:
            result.skipped[f"does not fit the entry schema ({exc.errors()[0]['msg']})"].append(code)
        except OSError as exc:
            raise AscendFdError(f"cannot write to {out}: {exc.strerror or exc}") from None
    return result
