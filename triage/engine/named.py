"""Errors that name what they are about, and the cause that name makes likely.

Python's commonest errors are a template around a name: `'X' object has no attribute 'y'`, `f() got
an unexpected keyword argument 'y'`, `KeyError: 'y'`, `cannot import name 'y' from 'x'`; so are the
system's and the runtimes' (an environment variable with a value it rejects, an address in use, a
path it cannot write, a checkpoint key the model lacks). The template is shared by thousands of
unrelated failures; the name is what this one is about. A known failure that printed the same
template about another name says little of this one, so its causes are not lent first; the name,
and what each template means, are (see `guess_advice`, and `rank.diagnose` for a family rule's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from triage.results import CauseResult, FixResult, replace

CAUSE_ID = "named-mismatch"
SETUP_KINDS = frozenset({"env", "address", "unwritable"})
"""Templates whose name is the job's own setting, port or path, not a package's API."""
NAMED_PROBABILITY = 0.5
"""What the name of an error that names what is missing is worth as its cause, ahead of causes lent
from failures that printed the same template about another name. Leave-thread-out on the train split
it led on 36 guesses and was the thread's cause on 7 of the 10 that a confirmed fix judges: too few to
set it by, so it stays at an even share with what it leads."""


@dataclass(frozen=True)
class NamedFailure:
    kind: str
    """Which template: attribute, module-attribute, none-attribute, keyword, missing, key, name, import (shadowed
    where the module is found as a bare directory), module, arity, twice; env, address, unwritable, checkpoint."""
    name: str
    owner: str = ""
    """What lacks it: the object's type, the function, the module (empty where the template names none)."""

    @property
    def title(self) -> str:
        return _TITLES[self.kind].format(name=self.name, owner=self.owner)

    def cause(self, probability: float) -> CauseResult:
        return CauseResult(
            id=CAUSE_ID,
            title=self.title,
            probability=probability,
            how_to_tell=_HOW_TO_TELL.get(self.kind, _HOW_TO_TELL_CODE).format(name=self.name),
        )

    def first_of(self, causes: list[CauseResult]) -> list[CauseResult]:
        """The causes with what this name means first, the others' shares scaled down to the rest."""
        rest = 1.0 - NAMED_PROBABILITY
        return [self.cause(NAMED_PROBABILITY)] + [
            replace(cause, probability=round(cause.probability * rest, 3)) for cause in causes
        ]

    def fix(self) -> FixResult | None:
        """What to do about it, where the template says (a None read has too many makers to say)."""
        made = _FIXES.get(self.kind)
        if made is None:
            return None
        title, description = made
        return FixResult(
            title=title.format(name=self.name, owner=self.owner),
            addresses=[CAUSE_ID],
            description=description.format(name=self.name, owner=self.owner),
        )


_SKEW = "its caller was written for another release of it (an API one side changed), or one has a bug"
_TITLES = {
    "attribute": f"`{{owner}}` has no attribute `{{name}}`, which the code reading it expects: {_SKEW}",
    "module-attribute": f"Module `{{owner}}` has no `{{name}}`: {_SKEW}",
    "none-attribute": (
        "`{name}` was read from None: a value the code expects (a config field, a module, a result) was never "
        "set, most often by a step or an option this setup skips"
    ),
    "keyword": f"`{{owner}}()` takes no argument `{{name}}`: {_SKEW}",
    "missing": f"`{{owner}}()` is called without {{name}}: {_SKEW}",
    "arity": f"`{{owner}}()` is called with more positional arguments than it takes: {_SKEW}",
    "twice": f"`{{owner}}()` gets `{{name}}` twice (by position and by name): {_SKEW}",
    "key": (
        "The key `{name}` is missing where the code looks it up: a checkpoint, config or mapping of another "
        "model or release than the code expects"
    ),
    "name": (
        "`{name}` is used where it is not defined: a patched or copied function lags the code around it "
        "(another release), or a bug"
    ),
    "import": f"`{{owner}}` has no `{{name}}` to import: {_SKEW}",
    "shadowed": (
        "`{owner}` is found as a bare directory, not its installed package (a folder of that name where Python "
        "looks first, or a broken install), so it has no `{name}`"
    ),
    "module": (
        "Python cannot import `{name}`: it is not installed in this environment, or was built for another "
        "Python, torch or CANN"
    ),
    "env": (
        "The environment variable `{name}` is set to a value that this release does not accept (not of the form "
        "or range the message states, or naming an interface or file that is not there)"
    ),
    "address": (
        "The address the job binds ({name}) is already in use on this host: a previous run or its leftover "
        "workers still hold it, or two instances or components are given the same port"
    ),
    "unwritable": (
        "The job cannot write or open `{name}`: it is on a read-only mount (a container volume, a shared release "
        "tree), or the user the job runs as lacks the permission"
    ),
    "checkpoint": (
        "The checkpoint does not fit the model at `{name}`: it was saved from another model variant, adapter or "
        "parallel layout, or by a release that names its layers differently"
    ),
}
_HOW_TO_TELL_CODE = (
    "The error names `{name}`: the traceback's last frames show the code that expects it and the package it "
    "expects it from; that package's release notes (or its source at your version) show whether it has it."
)
_HOW_TO_TELL = {
    "env": (
        "`env | grep {name}` in the job's environment shows the value it ran with (a launcher, a container image "
        "or a set_env script may set it); the message states the form or range it accepts."
    ),
    "address": (
        "`ss -ltnp` (or `lsof -i`) on that host, while the job starts, shows which process holds {name}: a "
        "previous run's leftover workers, another instance, or another component of the same service."
    ),
    "unwritable": (
        "`touch` a file in that directory as the job's user: a read-only mount (a container volume, a shared "
        "release tree) or another owner refuses it."
    ),
    "checkpoint": (
        "The keys the checkpoint holds (`safetensors` metadata, or `torch.load(...).keys()`) against the model's "
        "`state_dict().keys()` around `{name}` show which side is of another layout."
    ),
}
_IN_STEP = (
    "Install the releases that were made together: the version of the package that defines `{owner}` "
    "that the calling code's requirements pin (`pip list` shows what is installed), or the caller's release "
    "made for the installed one."
)
_KEY_FIX = (
    "Load a checkpoint and config made for this model and release",
    "The key `{name}` is looked up and absent: load the checkpoint with the model class and framework release "
    "that wrote it (a quantised, converted or adapter checkpoint needs its own loader), or map the renamed key.",
)
_FIXES = {
    "attribute": ("Put `{owner}` and the code that reads `{name}` in step", _IN_STEP),
    "module-attribute": ("Put `{owner}` and the code that uses `{name}` in step", _IN_STEP),
    "keyword": ("Put `{owner}()` and its caller in step", _IN_STEP),
    "missing": ("Put `{owner}()` and its caller in step", _IN_STEP),
    "arity": ("Put `{owner}()` and its caller in step", _IN_STEP),
    "twice": ("Put `{owner}()` and its caller in step", _IN_STEP),
    "import": ("Install the release of `{owner}` that has `{name}`", _IN_STEP),
    "shadowed": (
        "Import `{owner}` from its installed package",
        "Start the job from another directory (a checkout or folder named `{owner}` in the working directory or on "
        "PYTHONPATH comes first), or reinstall the package (`pip install --force-reinstall`); `python -c 'import "
        "{owner}; print({owner}.__path__)'` shows which one Python finds.",
    ),
    "name": (
        "Update the package whose code uses `{name}`",
        "A function that uses a name it never defines is a bug, or a patch made for another release of the code it "
        "replaces: install the release of that package made for your torch / framework, or the newer one.",
    ),
    "key": _KEY_FIX,
    "env": (
        "Set `{name}` in the form the message states, or unset it",
        "Give `{name}` a value of the form and range the message states (an interface or file that exists on "
        "this host), or unset it to take the default; a launcher, container image or set_env script may set it.",
    ),
    "address": (
        "Free the port, or give this instance its own",
        "Stop the process that holds {name} (a previous run's leftover workers: `pkill -f` the old job), or "
        "configure a free port for this instance; several instances on one host, and each component of one "
        "service, need ports of their own.",
    ),
    "unwritable": (
        "Write to a directory the job can write",
        "Point the setting that chose `{name}` (an output, cache, report or log directory) at a writable "
        "directory, or mount it read-write / give the job's user ownership of it.",
    ),
    "checkpoint": _KEY_FIX,
    "module": (
        "Install the package that provides `{name}` into the Python that runs the job",
        "`python -c 'import sys; print(sys.executable)'` in the job's environment names that Python; install the "
        "package there with the build made for its Python, torch and CANN.",
    ),
}
_QUOTED = r"['\"]([^'\"]{1,120})['\"]"
_CALLABLE = r"(?<![\w.<>])([\w.<>]+)"
"""A callable's name, read from its start only: from each character of a long run of word characters
not followed by `()`, the search read the rest of the run (a 16 KB message: 1.7 s)."""


_TEMPLATES: tuple[tuple[str, str], ...] = (
    ("module-attribute", rf"\bmodule {_QUOTED} has no attribute {_QUOTED}"),
    ("attribute", rf"(?:type object )?{_QUOTED} object has no attribute {_QUOTED}"),
    ("keyword", rf"{_CALLABLE}\(\) got an unexpected keyword argument {_QUOTED}"),
    (
        "missing",
        rf"{_CALLABLE}\(\) missing \d+ required (?:positional |keyword-only )?arguments?: ('[^']+'(?:,? (?:and )?'[^']+')*)",
    ),
    (
        "arity",
        rf"{_CALLABLE}\(\) takes (?:from )?\d+ (?:to \d+ )?positional arguments? but \d+ (?:were|was) given",
    ),
    ("twice", rf"{_CALLABLE}\(\) got multiple values for (?:keyword )?argument {_QUOTED}"),
    ("import", rf"cannot import name {_QUOTED} from {_QUOTED}"),
    ("module", rf"No module named {_QUOTED}"),
    ("name", rf"\bname {_QUOTED} is not defined"),
    ("key", rf"\bKeyError: {_QUOTED}"),
    (
        "env",
        r"\b[Ee]nvironment variable \[?([A-Z][A-Z0-9_]{2,})\]? (?:is )?(?:invalid|illegal|not (?:valid|supported))"
        r"|\bby ([A-Z][A-Z0-9_]{2,}), but not found",
    ),
    ("address", r"\bAddress already in use\b(?:.{0,80}?([\w.:/-]{0,80}:\d{2,5}\b|\bport \d{2,5}))?"),
    # Not a device node: a family rule knows what /dev/davinci* refused means (the user's group).
    (
        "unwritable",
        r"\[Errno (?:30|13)\] (?:Read-only file system|Permission denied): ['\"](?!/dev/)([^'\"]{1,120})['\"]",
    ),
    (
        "checkpoint",
        r"(?:Missing|Unexpected) key\(s\) in state_dict: \"([^\"]{1,200})\"|\bsize mismatch for ([\w.]{1,200}):",
    ),
)
"""Each template, with the owner's group first where it names one (the import's name comes first)."""


@cache
def _patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The templates compiled, at the first error line a family rule or a guess reads (most scans never
    reach one)."""
    return tuple((kind, re.compile(source)) for kind, source in _TEMPLATES)


MESSAGE_CHARS = 4096
"""How much of a message the templates read: a template and its name open the message, and each
template read a 1 MB line in 10-20 ms (the line cap, `scanner.MAX_LINE`)."""


def named_failure(message: str) -> NamedFailure | None:
    """The template and name of an error message that is a template around a name; None for any other."""
    message = message[:MESSAGE_CHARS]
    for kind, pattern in _patterns():
        found = pattern.search(message)
        if found is None:
            continue
        # Only an address may come without its name (the port), and several templates have alternatives.
        groups = tuple(group for group in found.groups() if group is not None) or ("its port",)
        if kind == "import":
            # `(unknown location)`: a namespace package, the directory and not the installed package.
            shadowed = message.startswith(" (unknown location)", found.end())
            return NamedFailure("shadowed" if shadowed else kind, groups[0], groups[1])
        if kind == "arity":
            return NamedFailure(kind, groups[0], groups[0])
        if len(groups) == 1:
            return NamedFailure(kind, groups[0])
        owner, name = groups
        if kind == "attribute" and owner == "NoneType":
            return NamedFailure("none-attribute", name)
        return NamedFailure(kind, name, owner)
    return None
