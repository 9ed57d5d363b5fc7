"""Mask what a log says about the machine and its people before it leaves in a report or an issue.

A rule set applied in order (secrets first, so that a later rule cannot expose part of one):
private keys, tokens (Hugging Face, GitHub, AWS, OpenAI, Slack, JWT, `Bearer`), `key=`/`token=`/
`password=`/`secret=` assignments and env variables whose names say secret, credentials in URLs,
e-mail addresses and `user@host`, user names in home directories on every OS, host names (dotted
names with a network suffix, and any name learnt from `MASTER_ADDR`/`HOSTNAME`/`hostname` fields or
this machine's name, with or without a domain), IP addresses, and the directories of paths.

Only text that came from the user's machine is redacted (log lines, source names, errors, probe
output, environment values), never KB text such as reference URLs: `redact_result` knows which is which.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from triage.results import CauseResult, Diagnosis, EvidenceLine, ScanResult, replace

SECRET = "<redacted>"
_SECRET_WORD = (
    r"(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?|auth)"
)
SECRET_NAME = re.compile(rf"(?i)^[\w.-]*{_SECRET_WORD}[\w.-]*$|^[\w.-]*_KEY$")
"""Names (of env variables, fields) whose values are secrets."""

Rule = tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]

_RULES: tuple[Rule, ...] = (
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S), "<private key>"),
    (re.compile(r"\bhf_[A-Za-z0-9]{20,}"), "<token>"),
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,})"), "<token>"),
    (re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), "<token>"),
    (re.compile(r"\bsk-[\w-]{20,}"), "<token>"),
    (re.compile(r"\bxox[abprs]-[\w-]{10,}"), "<token>"),
    (re.compile(r"\beyJ[\w-]{5,}\.[\w-]{5,}\.[\w-]*"), "<token>"),
    (re.compile(r"(?i)\b(Bearer|Basic|Token)\s+[\w~+/.=-]{8,}"), rf"\1 {SECRET}"),
    # name=value, name: value, "name": "value"; an upper-case env name may also be followed by a space.
    (
        re.compile(
            rf"""(?ix)
            (\b[\w.-]*{_SECRET_WORD}[\w.-]*["']?)
            (\s*[=:]\s*|(?-i:(?<=[A-Z0-9_])\s+))
            ("[^"]*"|'[^']*'|[^\s,;&"'}}\]]+)
            """
        ),
        rf"\1\2{SECRET}",
    ),
    (re.compile(r"\b([a-zA-Z][\w+.-]*://)[^/\s:@]+(?::[^/\s@]*)?@"), r"\1<user>:" + SECRET + "@"),
    (re.compile(r"\b[\w.+-]+@(?:[\w-]+\.)+[A-Za-z]{2,}\b"), "<email>"),
    (re.compile(r"\b[a-z_][\w.-]*@[A-Za-z][\w-]*\b"), "<user>@<host>"),
    (re.compile(r"(?i)\b([A-Z]:\\(?:Users|Documents and Settings)\\)[^\\\s]+"), r"\1<user>"),
    (re.compile(r"(/(?:home|Users|export/home)/)[^/\s]+"), r"\1<user>"),
    (re.compile(r"(?<![\w/.~])~[a-z_][\w.-]*"), "~<user>"),
)
_IPV4 = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b")
# A "::" or five colons tells an IPv6 address from a clock time such as 10:00:01.
_IPV6 = re.compile(
    r"(?<![\w:])(?=[0-9a-fA-F:]*::|(?:[0-9a-fA-F]{1,4}:){5})(?:[0-9a-fA-F]{0,4}:){2,7}[0-9a-fA-F]{0,4}(?![\w:])"
)
# Only dotted names ending in a network suffix: Python module paths (torch_npu.npu.utils) must survive.
_HOSTNAME = re.compile(
    r"\b(?:[a-zA-Z0-9-]+\.)+(?:local|lan|internal|intra|corp|cluster|com|net|org|io|cn|edu|cloud|ai)\b"
)
# Two or more components, so that a lone "/tmp" or a ratio "1/2" is left alone.
_PATH = re.compile(r"(?:~|\.{1,2})?(?:/[\w.\-@+<>]+){2,}/?")
_WINDOWS_PATH = re.compile(r"\b[A-Za-z]:\\(?:[^\\\s]+\\)+")
_HOST_FIELD = re.compile(
    r"(?i)\b(?:MASTER_ADDR|HOSTNAME|HOST_?NAME|hostname|host|node(?:_?name)?)\b[\"']?\s*[=:]\s*[\"']?([A-Za-z][\w.-]*[\w])"
)
"""Fields that name a host: their values are masked wherever else they appear too."""
_USER_AT_HOST = re.compile(r"\b[a-z_][\w.-]*@([A-Za-z][\w-]*)\b")


@dataclass
class Redactor:
    """Callable on one text; `hosts` are names masked wherever they appear."""

    hosts: set[str] = field(default_factory=set)

    @classmethod
    def for_texts(cls, texts: Iterable[str], hosts: Iterable[str] = ()) -> Redactor:
        """A redactor that also knows every host name the texts reveal in a field or a `user@host`."""
        found = {name for name in hosts if name}
        for text in texts:
            found |= {m.group(1) for m in _HOST_FIELD.finditer(text)}
            found |= {m.group(1) for m in _USER_AT_HOST.finditer(text)}
        # A learnt FQDN also hides its short name (node17.cluster.local -> node17).
        found |= {name.split(".", 1)[0] for name in found if not _IPV4.fullmatch(name)}
        return cls(hosts={name for name in found if len(name) > 1 and not _IPV4.fullmatch(name)})

    def __call__(self, text: str) -> str:
        for pattern, replacement in _RULES:
            text = pattern.sub(replacement, text)
        for host in sorted(self.hosts, key=len, reverse=True):
            text = re.sub(rf"(?<![\w.-]){re.escape(host)}(?![\w-])", "<host>", text)
        text = _IPV4.sub("<ip>", text)
        text = _IPV6.sub("<ip>", text)
        text = _PATH.sub(lambda m: "<path>/" + m.group(0).rstrip("/").rsplit("/", 1)[-1], text)
        text = _WINDOWS_PATH.sub(r"<path>\\", text)
        return _HOSTNAME.sub("<host>", text)

    def environment(self, environment: dict[str, str]) -> dict[str, str]:
        return {name: self(value) for name, value in environment.items()}


def mask_secret_values(environment: dict[str, str]) -> dict[str, str]:
    """Values of variables whose names say secret, masked: they never belong in a report."""
    return {name: SECRET if SECRET_NAME.match(name) else value for name, value in environment.items()}


def this_host() -> str:
    return socket.gethostname()


def result_texts(result: ScanResult) -> list[str]:
    """Every text of `result` that came from the user's machine (what `redact_result` masks)."""
    texts = list(result.errors)
    for diagnosis in result.diagnoses:
        texts += [f"{e.source} {e.text}" for e in diagnosis.evidence]
        texts += [str(value) for value in diagnosis.extracted.values() if isinstance(value, str)]
    return texts


def redact_result(result: ScanResult, redactor: Redactor) -> ScanResult:
    """`result` with machine text masked: evidence, extracted strings, errors, probe output and notes."""
    return replace(
        result,
        diagnoses=[_redact_diagnosis(d, redactor) for d in result.diagnoses],
        errors=[redactor(error) for error in result.errors],
        probes=[_redact_data(probe, redactor) for probe in result.probes],
    )


def _redact_diagnosis(diagnosis: Diagnosis, redactor: Redactor) -> Diagnosis:
    return replace(
        diagnosis,
        evidence=[_redact_evidence(line, redactor) for line in diagnosis.evidence],
        extracted=_redact_data(diagnosis.extracted, redactor),
        causes=[_redact_cause(cause, redactor) for cause in diagnosis.causes],
        probe_notes=[redactor(note) for note in diagnosis.probe_notes],
    )


def _redact_evidence(line: EvidenceLine, redactor: Redactor) -> EvidenceLine:
    return replace(line, source=redactor(line.source), text=redactor(line.text))


def _redact_cause(cause: CauseResult, redactor: Redactor) -> CauseResult:
    return replace(cause, evidence=[redactor(text) for text in cause.evidence])


def _redact_data(value: Any, redactor: Redactor) -> Any:
    """Strings anywhere in JSON-like data (probe results, extracted values), keys and numbers kept."""
    if isinstance(value, str):
        return redactor(value)
    if isinstance(value, dict):
        return {key: _redact_data(item, redactor) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact_data(item, redactor) for item in value]
    return value
