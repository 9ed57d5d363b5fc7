"""pydantic models of a knowledge-base entry.

An entry describes one error signature: how to recognise it in a log, what can cause it, how to fix
it and which live probes can confirm a cause. Entries are data only: they name probes, they never
carry commands for triage to execute.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationInfo, field_validator, model_validator

from triage.kb.byte_patterns import bytes_problem
from triage.kb.versions import SPECIFIER

CATEGORIES: tuple[str, ...] = (
    "unsupported_op",
    "npu_oom",
    "hccl_timeout",
    "segfault",
    "nan_loss_scale",
    "env_version",
    "dynamic_shape_compile",
    "other",
)
"""The fixed category names; each is also a folder under `kb/`. `other` holds device, driver and
hardware faults that are none of the above (P2P mapping, driver internal errors)."""

Severity = Literal["critical", "error", "warning", "info"]
VersionedPackage = Literal["torch_npu", "torch", "cann", "driver", "vllm_ascend", "vllm", "python"]
"""The packages whose versions `triage.engine.context` reads from a log (its VERSION_PATTERNS)."""
VersionRange = Annotated[str, StringConstraints(pattern=SPECIFIER)]
Status = Literal["draft", "experimental", "test", "stable"]
"""`draft`: written by `triage kb new` with TODOs left; ranks below curated entries and is refused
by `triage kb validate --strict`."""
ExtractKind = Literal["size", "int", "float", "str"]

ID_PATTERN = r"^[a-z0-9][a-z0-9-]*[a-z0-9]$"


def _snake_case_category(value: str) -> str:
    # A category is a folder name under kb/; unknown ones are a validator's warning, not a load error.
    if not re.fullmatch(r"[a-z][a-z0-9_]*", value):
        raise ValueError(f"category '{value}' must be snake_case")
    return value


VALIDATED = "validated"
"""Validation context key: the data were validated in full before (a cached load, see
`triage.kb.loader`), so their regexes are not compiled again (a third of a cold load's time)."""


def _compiling(info: ValidationInfo) -> bool:
    return not (info.context or {}).get(VALIDATED)


class _Strict(BaseModel):
    # defer_build: schemas are built on first validation, so importing the models stays cheap.
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


OLD_EXTRACTION = (
    "the old extraction form (`extract_kind`, or a bare regex under `extract`): run `triage kb migrate DIR`"
)


class Extract(_Strict):
    """One value pulled from a matched line, its kind beside its name."""

    regex: str | None = Field(
        None,
        description="Regex with one capture group searched in the matched line. Without it the value is the "
        "signature regex's named group of the same name.",
    )
    kind: ExtractKind = Field(
        "str", description="How to read the value: size (e.g. '2.00 GiB' -> bytes), int, float, str."
    )

    @field_validator("regex")
    @classmethod
    def _one_group(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and _compiling(info) and _compile_or_raise(value).groups != 1:
            raise ValueError(f"an extract regex needs exactly one capture group, has {re.compile(value).groups}")
        return value


class Signature(_Strict):
    """One way to recognise a line: exactly one of `text`, `regex` or `fuzzy`."""

    text: str | None = Field(None, description="Literal text, matched case-insensitively anywhere in a line.")
    regex: str | None = Field(
        None,
        description="Python regular expression searched in a line (case-insensitive). Named groups are extracted "
        "(as text unless `extract` gives their kind).",
    )
    fuzzy: str | None = Field(
        None,
        description="Message text matched fuzzily (rapidfuzz partial ratio) against the line's template, "
        "so rewordings, typos and prefixes still match.",
    )
    min_score: float = Field(88.0, ge=50, le=100, description="Minimum fuzzy score (0-100) for `fuzzy`.")
    weight: float = Field(1.0, gt=0, le=5, description="How much this signature counts towards the entry's score.")
    exclude: list[str] = Field(
        default_factory=list, description="Regexes: a line that matches any of them does not count for this signature."
    )
    extract: dict[str, Extract] = Field(
        default_factory=dict,
        description="Values to pull from the matched line, by name: {regex, kind}, or {kind} for a named group of `regex`.",
    )

    @model_validator(mode="before")
    @classmethod
    def _no_old_extraction(cls, data: object) -> object:
        if isinstance(data, dict):
            extract = data.get("extract")
            if "extract_kind" in data or (
                isinstance(extract, dict) and any(isinstance(v, str) for v in extract.values())
            ):
                raise ValueError(OLD_EXTRACTION)
        return data

    @model_validator(mode="after")
    def _exactly_one_pattern(self) -> Signature:
        given = [name for name in ("text", "regex", "fuzzy") if getattr(self, name)]
        if len(given) != 1:
            raise ValueError(f"a signature needs exactly one of text, regex, fuzzy (got {given or 'none'})")
        return self

    @field_validator("regex")
    @classmethod
    def _regex_compiles(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and _compiling(info):
            _compile_or_raise(value)
        return value

    @field_validator("exclude")
    @classmethod
    def _excludes_compile(cls, value: list[str], info: ValidationInfo) -> list[str]:
        for pattern in value if _compiling(info) else ():
            _compile_or_raise(pattern)
        return value

    @model_validator(mode="after")
    def _groups_exist(self, info: ValidationInfo) -> Signature:
        if not self.extract or not _compiling(info):
            return self
        # With the flags the field validator compiled it with: `re`'s cache has it still.
        groups = _compile_or_raise(self.regex).groupindex if self.regex is not None else {}
        for name, extract in self.extract.items():
            if extract.regex is None and name not in groups:
                raise ValueError(f"extract '{name}' has no regex and the signature regex has no group (?P<{name}>...)")
        return self

    @property
    def kind(self) -> Literal["text", "regex", "fuzzy"]:
        if self.text is not None:
            return "text"
        if self.regex is not None:
            return "regex"
        return "fuzzy"

    @property
    def pattern(self) -> str:
        return self.text or self.regex or self.fuzzy or ""

    @property
    def regex_source(self) -> str | None:
        """The regex a line is searched with: `regex` as written, `text` escaped; None for `fuzzy`."""
        return re.escape(self.text) if self.text is not None else self.regex


class Condition(_Strict):
    """A comparison of extracted values, e.g. reserved > 1.5 * allocated. Data, never code."""

    left: str
    op: Literal[">", ">=", "<", "<="]
    right: str | float
    factor: float = Field(1.0, description="The right side is multiplied by this before comparing.")


class Context(_Strict):
    """What was running, as the log shows it (see `triage.engine.context`): each list names the
    values that fit; an empty list says nothing about that dimension."""

    workload: list[str] = Field(
        default_factory=list,
        description="Frameworks, e.g. vllm, vllm-ascend, sglang, mindie, lmdeploy, llamafactory, ms-swift, hf-trainer, "
        "deepspeed, megatron, mindspeed, verl, llama.cpp, comfyui, diffusers, paddle, mindspore, triton-ascend, custom-kernel, "
        "or the groups serving / training.",
    )
    launcher: list[str] = Field(
        default_factory=list, description="torchrun, deepspeed, accelerate, mpirun, ray, msrun."
    )
    soc: list[str] = Field(default_factory=list, description="SoC name prefixes, e.g. Ascend910B, Ascend310P.")
    runtime: list[Literal["torch", "mindspore", "paddle", "llama.cpp"]] = Field(
        default_factory=list,
        description="The framework runtime the fix works through: `torch` for a fix that sets a torch_npu"
        " setting, calls torch / torch_npu or builds a PyTorch extension; dropped where the log shows the job"
        " runs on another one only (a MindSpore or Paddle job gets no PYTORCH_NPU_ALLOC_CONF).",
    )
    versions: dict[VersionedPackage, VersionRange] = Field(
        default_factory=dict,
        description='Version ranges by package, e.g. {driver: ">=23.0.0"} or {torch_npu: ">=2.1,<2.6"}: only'
        " numbers are compared, as many parts as both sides write (CANN 8.0.RC3 is 8.0).",
    )

    def as_dict(self) -> dict[str, Any]:
        return {key: value for key, value in self.model_dump().items() if value}


class Cause(_Strict):
    id: str = Field(pattern=ID_PATTERN)
    title: str
    prior: float = Field(0.5, gt=0, le=1, description="Prior likelihood of this cause among the entry's causes.")
    how_to_tell: str = Field("", description="How to tell this cause apart from the others.")
    evidence: list[Signature] = Field(default_factory=list, description="Lines that make this cause more likely.")
    against: list[Signature] = Field(
        default_factory=list, description="Lines that make this cause less likely (it drops when one is in the log)."
    )
    conditions: list[Condition] = Field(
        default_factory=list, description="Comparisons of extracted values that make this cause more likely."
    )
    likely_when: Context = Field(
        default_factory=Context,
        description="The job contexts in which this cause is more likely (and less likely when the log shows another).",
    )
    category: str | None = Field(
        None,
        description="The failure's category when this cause is the likeliest, where it is not the entry's (a "
        "compile failure because the compiler rejects the op or dtype is an unsupported op).",
    )

    @field_validator("category")
    @classmethod
    def _cause_category(cls, value: str | None) -> str | None:
        return value if value is None else _snake_case_category(value)


class CodeChange(_Strict):
    before: str
    after: str
    language: str = "python"


class Fix(_Strict):
    title: str
    addresses: list[str] = Field(default_factory=list, description="Ids of the causes this fix addresses.")
    description: str = ""
    env: dict[str, str] = Field(default_factory=dict, description="Environment variables to set.")
    code: CodeChange | None = None
    commands: list[str] = Field(
        default_factory=list, description="Shell commands for the user to run (never run by triage)."
    )
    kind: Literal["fix", "diagnostic"] = Field(
        "fix", description="`diagnostic`: a way to confirm the cause, shown after the fixes as 'to confirm'."
    )
    applies_to: Context = Field(
        default_factory=Context,
        description="The job contexts this fix is for; never offered where the log shows another one.",
    )
    confirmed_by: list[str] = Field(
        default_factory=list, description="URLs of threads or documents where this fix was confirmed to work."
    )
    culprit: bool = Field(
        False,
        description="Updating the package whose code raised the error: at scan time its name and upgrade commands"
        " (from the traceback, else the framework the log shows running) replace the title and commands;"
        " not offered where the log names no package.",
    )


class Reference(_Strict):
    url: str | None = None
    document: str | None = None
    supports: str = Field(description="What this reference supports: the error text, a cause, a fix.")

    @model_validator(mode="after")
    def _has_target(self) -> Reference:
        if not (self.url or self.document):
            raise ValueError("a reference needs a url or a document")
        return self


class Examples(_Strict):
    match: list[str] = Field(
        default_factory=list, description="Log snippets on which this entry must be the top diagnosis."
    )
    no_match: list[str] = Field(default_factory=list, description="Log snippets on which this entry must not fire.")


class Exclusion(_Strict):
    validator: str = Field(description="Name of a `triage kb validate` check to skip for this entry.")
    reason: str = Field(description="Why the check does not apply to this entry; required, and reviewed like code.")

    @field_validator("reason")
    @classmethod
    def _reason_written(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("an exclusion needs a written reason")
        return value


class Validation(_Strict):
    exclude: list[Exclusion] = Field(default_factory=list, description="Checks this entry skips, each with its reason.")


class Entry(_Strict):
    id: str = Field(pattern=ID_PATTERN)
    title: str
    category: str
    severity: Severity = "error"
    status: Status = "experimental"
    summary: str
    generic: bool = Field(
        False,
        description="A generic wrapper (ERR00100, EZ9999, ...): ranks below any specific cause found in the same log.",
    )
    family: bool = Field(
        False,
        description="A family rule: recognises a whole class of failures by its shape (any unloadable library, any "
        "NaN metric); ranks below the specific entries that fire on the same log and above nothing.",
    )
    stall: bool = Field(
        False,
        description="A hang: its signatures are banners that healthy runs print too, which count only where a log "
        "that has ended stops on one (within its last lines, no error after it), not where the job went past them.",
    )
    signatures: list[Signature] = Field(min_length=1)
    causes: list[Cause] = Field(default_factory=list)
    fixes: list[Fix] = Field(default_factory=list)
    probes: list[str] = Field(
        default_factory=list, description="Names of live probes that can confirm or rule out causes."
    )
    references: list[Reference] = Field(default_factory=list)
    related: list[str] = Field(default_factory=list, description="Ids of related entries.")
    examples: Examples = Field(default_factory=Examples)
    validation: Validation = Field(
        default_factory=Validation, description="Per-entry settings of `triage kb validate`."
    )

    @field_validator("category")
    @classmethod
    def _known_category(cls, value: str) -> str:
        return _snake_case_category(value)

    @model_validator(mode="after")
    def _fixes_address_known_causes(self) -> Entry:
        cause_ids = {cause.id for cause in self.causes}
        if len(cause_ids) != len(self.causes):
            raise ValueError("cause ids must be unique within an entry")
        for fix in self.fixes:
            unknown = set(fix.addresses) - cause_ids
            if unknown:
                raise ValueError(f"fix '{fix.title}' addresses unknown causes: {sorted(unknown)}")
        return self


def _compile_or_raise(pattern: str) -> re.Pattern[str]:
    try:
        compiled = re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"regex {pattern!r} does not compile: {exc}") from exc
    problem = bytes_problem(pattern)
    if problem is not None:
        raise ValueError(f"regex {pattern!r} cannot be searched in a log's bytes: {problem}")
    return compiled
