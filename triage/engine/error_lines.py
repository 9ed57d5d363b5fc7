"""Recognise lines that report an error in any wording, and the message inside a prefixed line.

The safety net stands on this: a log whose error no KB entry claims still gets a diagnosis, so
"no diagnosis" means "no error", never "no rule". Pure functions over decoded text.
"""

from __future__ import annotations

import re

from triage.engine.literal_gate import GatedPattern, gate_lowered, gate_text

# Kinds of error line, most telling first: a traceback's exception names the failure, a code
# pins it, a fatal signal says how the process died, a log level only says something went wrong.
EXCEPTION, CODE, SIGNAL, LEVEL, TRACEBACK, EXIT, SYMPTOM, WARNED = (
    "exception",
    "code",
    "signal",
    "level",
    "traceback",
    "exit",
    "symptom",
    "warned",
)
SALIENCE = {EXCEPTION: 1.0, CODE: 0.9, SIGNAL: 0.8, LEVEL: 0.55, TRACEBACK: 0.5, EXIT: 0.4, SYMPTOM: 0.3, WARNED: 0.2}
"""A traceback whose exception line was cut off (pastes often end mid-traceback) still says that
the job raised; its frames tell where."""

_EXCEPTION = re.compile(
    r"(?:^|[\s:\]\)>|(\[])"  # `[` too: a wrapper that quotes the exception, `Failed to import X [AttributeError: ...]`
    r"((?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Failed|Failure|Fault|Unsupported)|Exception|Error))"
    r"(?::\s|:$|$|\((?=['\"]))"  # `NameError: x`, or its repr `NameError('x')` as loggers print it
)
_UNSPACED_EXCEPTION = re.compile(
    r"(?:^|[\s\])>|(])((?:Runtime|Value|Type|Attribute|Key|Index|Import|ModuleNotFound|Assertion|NotImplemented|OS"
    r"|Memory|FileNotFound|Recursion|ZeroDivision|Name|Lookup)Error):(?=[A-Za-z\[('\"])"
)
"""Python's own exceptions as a paste retyped them, the space after the colon lost (`RuntimeError:Error!,
The last dimension ...`): only the built-in names, so that a C++ function's `GetError:Stream ...` stays a
log line."""
_QUALIFIED_EXCEPTION = re.compile(r"^ ?((?:[a-z_]\w*\.)+[A-Z]\w*):\s")
"""A raised class of any name, as a traceback's last line prints it with its module (`pyarrow.lib.ArrowInvalid:
...`, `subprocess.TimeoutExpired: ...`, `__main__.TooFewObj: ...`): at the start of the message, where
a traceback puts it (after a launcher's prefix and its space), never indented like its code lines."""
_VALIDATION_DETAIL = re.compile(r"^\s*(?:[Vv]alue error|Assertion failed), (\S.*?)(?: \[type=[a-z_]+[,\]].*)?$")
"""The line under pydantic's `ValidationError: 1 validation error for ModelConfig` that says what is
wrong (vLLM's and sglang's config checks): `  Value error, max_num_batched_tokens (2048) is smaller than
max_model_len (32768). [type=value_error, input_value=...]`, or as a user retyped it, lower-cased. Its
message is the error raised (read as `ValidationError: <message>`); the header only wraps it."""
_CPP_WHAT = re.compile(r"^\s*what\(\):\s+(\S.*)$")
"""The message of an uncaught C++ exception, under `terminate called after throwing an instance of
'c10::Error'` (`  what():  vector::reserve`, a torch_npu or HCCL error, OpenCV's CANN backend): it says
what failed, the terminate line only how the process ended."""
_DETAIL_MARKS = ("Value error, ", "value error, ", "Assertion failed, ", "what():")
"""What a detail line above holds, tested before its prefix is stripped: most error lines hold none."""
_VALIDATION_HEADER = re.compile(r"ValidationError: \d+ validation errors? for ")
_CODE_ID = re.compile(r"E(?<!\wE)(?:[A-Z][0-9]{4}|[1-9][0-9]{4}|RR[0-9]{5})\b")
"""CANN's error ids (EZ9999, E40021, ERR00100) at a word's start: written to start with its letter, so
that `re` looks for that letter, not for a word boundary at every position of the line."""
_CODE_WORDS = (
    r"(?i:\b(?:error[ _]?code|ret(?:urn)?[ _]?code|errno|error_code|ret)\s*(?:is\s*)?[=:\[]?\s*(?:is\s*)?-?"
    r"(?:0x[0-9a-f]*[1-9a-f][0-9a-f]*|[1-9]\d{2,}))"
)
"""A return or error code's words and its non-zero value."""
_SIGNAL = (
    r"(?i:segmentation fault|\bSIGSEGV\b|\bSIGABRT\b|\bSIGBUS\b|\bSIGKILL\b|bus error|core dumped|"
    r"fatal python error|terminate called|double free|corrupted (?:size|double-linked)|"
    r"signal\s*:?\s*(?:6|7|9|11)\b|\bkilled\b.*\b(?:signal|oom)|oom-kill|failing at address:\s*(?:0x|\(nil\)))"
)
_GLOG_STAMP = r"\[?[{levels}]\d{{4}}(?:\d{{4}})? \d{{2}}:\d{{2}}:\d{{2}}"
"""glog's and PyTorch C++'s severity letter glued to the date: `E1208 11:52:44.736321 69197 file.cc:96]`,
`[E1208 11:52:44.736321597 ProcessGroupNCCL.cpp:616]`, xLLM's `E20251208 ...`."""
_GLOG_LEVEL = r"(?:^|(?<=[\s\]:]))" + _GLOG_STAMP
_GLOG_REST = r"(?:\.\d+)?(?:\s+\d+)? [\w.-]+:\d+\]"
"""What follows glog's stamp in its prefix: microseconds, the thread id, the file and line."""
_PADDLE_STAMP = r"\[[{levels}]\s+\d{{1,2}}/\s?\d{{1,2}} \d\d:\d\d:\d\d"
"""Paddle-Lite's level and date: `[F 12/ 1 14:47:20.689 ...cc:294 Engine]`."""
_LEVEL_WORDS = re.compile(
    r"\[ERROR\]|\bERROR\b|\[E\]|\bFATAL\b|\bCRITICAL\b|(?<![\w.])[Ee]rror:\s|\bfailed\b|\bFAIL(?:ED)?\b"
    r"|(?i:hit an exception|exception (?:occurred|raised|was raised|in thread)|\braises? an? \w+ exception)|错误|失败|报错"
    r"|\[(?:error|critical|fatal)\]|\[Hardware Error\]|\blevel=(?:error|fatal|panic)\b|\b[Ff]ailure\s+\d{3,}\b"
    # a C / C++ abort at its source location (GGML_ABORT): `.../ggml-cann.cpp:63: CANN error`
    r"|^\S*\.(?:c|cc|cpp|cxx|cu|h|hpp):\d+: (?:[^:\n]*\s)?[Ee]rror$"
    # a Kubernetes event that something failed (`kubectl describe`): `Warning  FailedScheduling  96s  ...`
    r"|^\s*Warning\s+(?:\w*Failed\w*|BackOff|Unhealthy|Evicted)\s"
    # a server's JSON error response, as a client prints it: OpenAI-style `{"object":"error",...}` or `{"error": ...}`
    r"|\"object\"\s*:\s*\"error\"|^\s*\{\s*\"error\"\s*:\s*[\"{]"
)
_LEVEL_STAMPS = re.compile(
    r"^[EF]/[\w.-]+:\s|" + _PADDLE_STAMP.format(levels="FE") + "|" + _GLOG_LEVEL.format(levels="EF")
)
"""An error's level as a letter: Android's `E/tag:`, Paddle-Lite's and glog's stamps. Apart from the
words, whose literals then rule most lines out before they are searched (see `literal_gate`)."""
_QUIET_LEVEL = re.compile(r"\[(?:INFO|DEBUG|I|info|debug)\]|\b(?:INFO|DEBUG)\b|" + _GLOG_LEVEL.format(levels="ID"))
"""A logger's level that says its line is no error: a symptom's word there is not one."""
_TRACEBACK = re.compile(r"Traceback \(most recent call last\)")
_SYMPTOM = (
    r"(?i:\bnan\b|\binf\b(?!o)|overflow|\bis (?:invalid|not valid)\b|out of memory|\boom\b|not (?:yet |currently )?supported|unsupported|not implemented|"
    r"segmentation|core dump|\bkilled\b|undefined symbol|cannot open|no such file|mismatch|timed out|\bhang(?:s|ing)?\b|"
    r"\bstuck\b|deadlock|illegal|no kernel|does not (?:has|have) any binary|requirements are unsatisfiable|"
    r"no solution found when resolving|could not find a version that satisfies|: command not found|"
    # a resolver's conflict, a linker's missing symbol, a checkpoint's keys, a numeric check that failed
    r"conflicting dependencies|the conflict is caused by|resolutionimpossible|undefined reference to|"
    r"(?:missing|unexpected) key\(s\) in state_dict|size mismatch for \w|not within tolerances?\b|"
    r"allclose\([^)]*\): false|mismatched elements:|"
    # a server's answer that the request failed, as its access log writes it (MindIE's endpoint; uvicorn's
    # access lines carry INFO, under which a failure's word is chatter)
    r"\"(?:get|post|put|delete) /\S* http/\d(?:\.\d)?\" [45]\d\d\b|\bstatus code(?: is)?:? [45]\d\d\b)"
)
"""Words of a failure on a line that no log level or exception marks: the weakest sign, kept for
logs that hold nothing stronger (NaN metrics, a bare `Killed`, a 'not supported' notice)."""
_WARNING_LEVEL = re.compile(
    r"(?:^|(?<=[\s\]:]))" + r"\[?W\d{4}(?:\d{4})? \d{2}:\d{2}:\d{2}"
    r"|\[W\s+\d{1,2}/\s?\d{1,2} \d\d:\d\d:\d\d|\[W(?:ARN(?:ING)?)?\]|\bWARN(?:ING)?\b|\bWarning:"
)
"""A warning's level: glog's `W1201 01:55:32`, Paddle-Lite's `[W  1/ 8 18:48:16`, `[WARNING]`, `Warning:`."""
_WARNED_FAILURE = re.compile(r"\b(?:[Ff]ailed|FAILED|[Ff]ailure|[Ee]rror|ERROR|[Uu]nable to|[Cc]annot|[Cc]an't)\b")
_BENIGN_WARNING = re.compile(
    r"(?i:(?<!\w)\w+Warning:|error[_ ]?(?:rate|count)|no errors?\b|errors?\s*[=:]\s*0\b|fall(?:ing)? ?back|retry|retrying)"
)
"""Python's warning categories (a deprecation says nothing failed), counters, and failures the
program says it recovers from."""
_EXIT = (
    r"(?i:exit(?:ed)?\s*(?:with\s*)?(?:code|status)\s*[:=]?\s*-?[1-9]\d*|exitcode\s*:\s*-?[1-9]\d*"
    r"|returned non-zero exit status|non-zero exit code|^\S*make(?:\[\d+\])?: \*\*\* .* Error \d+)"
)
_NOT_AN_ERROR = (
    r"(?i:\b(?:no|0|zero)\s+errors?\b|\berrors?\s*[=:]\s*0\b|error[_ ]?(?:rate|count)\b|"
    r"\bif (?:an? )?error|ignore[sd]? (?:the )?errors?|warnings?\s*:|UserWarning|FutureWarning|"
    r"DeprecationWarning|^\s*File \"|^[\s>]*raise\s|"
    r"\b(?:nan|inf|errors?|fail\w*|overflow\w*|skipped|timeouts?)\b[\w ]{0,24}[:=]\s*0(?:\.0+)?(?![.\dxX])|"
    # a counter written without its colon: "overflow steps 0, skipped steps 0"
    r"\b(?:nan|inf|overflow|skipped)\w* \w+ 0[,;|])"
)

_QUIET_LEVELS = "INFO|WARNING|WARN|DEBUG"
"""A logger's levels below an error's, as its prefix spells them."""
_ERROR_LEVELS = "ERROR|CRITICAL|FATAL"
_PREFIXES: tuple[tuple[str, bool], ...] = (
    # (one prefix, whether it is a level below an error's: INFO, WARNING, DEBUG)
    # 2024-05-01 12:00:00,123, CANN's 2024-05-01-12:00:00.123.456, MindIE's ...028+0000], sglang's [... TP1]
    (
        r"\[?\d{4}[-/]\d{2}[-/]\d{2}[ T-]\d{2}:\d{2}:\d{2}(?:[.,:]\d+)*(?:Z|[+-]\d{2}:?\d{2})?(?: [A-Z]{2}\d+)*\]?",
        False,
    ),
    (r"\(PID:\s*\d+, Device:\s*-?\d+, RankID:\s*-?\d+\)", False),  # torch_npu's error prefix
    # CANN's plog module and process: RUNTIME(1234,python):, MINDOCR(1:2,Process-1:3):
    (r"[A-Z_]+\(\d+[:,][\w.:,-]*\):", False),
    (r"\[?\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?\]?", False),  # vLLM's 07-03 19:33:28
    (r"\d{2}:\d{2}:\d{2}(?:[.,]\d+)?", False),
    (
        r"[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} [\w.-]+ [\w./-]+(?:\[\d+\])?:",
        False,
    ),  # syslog: May  1 10:11:12 host python[12]:
    (r"(?:stdout|stderr) [FP](?= )", False),  # a container runtime's stream and tag, after its timestamp
    (r"\([\w .\-]+(?:pid|rank|ip)=[^)]*\)", False),  # (VllmWorker rank=3 pid=12) (RayWorker pid=1, ip=...)
    (r"\[(?:rank|default|RANK)\s*\d+\]:?", False),  # torchrun
    (r"\[\d+,\d+\]<std(?:out|err)>:", False),  # mpirun
    (r"\[(?:ERROR|CRITICAL|E)\]", False),
    (rf"\[(?:{_QUIET_LEVELS}|W|I)\]", True),
    (r"\[(?:error|critical|fatal)\]", False),  # spdlog (ATB, xLLM): [error]
    (r"\[(?:warning|warn|info|debug|trace)\]", True),
    (_GLOG_STAMP.format(levels="EF") + _GLOG_REST, False),  # glog, PyTorch C++
    (_GLOG_STAMP.format(levels="WID") + _GLOG_REST, True),
    (r"\[\d+\]", False),  # spdlog's thread id
    (r"\x1b?\[\d+(?:;\d+)*m", False),  # a colour code, or what a paste keeps of one without its ESC: [0;36m
    (_PADDLE_STAMP.format(levels="FE") + r"\.\d+ [^\]\n]*\]", False),  # Paddle-Lite
    (_PADDLE_STAMP.format(levels="WI") + r"\.\d+ [^\]\n]*\]", True),
    (r"\d{1,3}%\|[^|\n]{0,400}\|\s*\d+/\d+\s*\[[^\]\n]{0,80}\]\.?", False),  # a tqdm bar the next output was glued to
    (rf"(?:{_ERROR_LEVELS})\b:?", False),
    (rf"(?:{_QUIET_LEVELS})\b:?", True),
    (r"\[[\w./-]+\.(?:py|cpp|cc|h|ts):\d+\]", False),  # [multiproc_worker_utils.py:238]
    (rf"\[(?!(?:{_QUIET_LEVELS}|W|I)\])[A-Z]{{1,8}}\]", False),  # [PID] [TBE] [ASCEND] [FATAL]
    (r"\[[a-z][a-z_]{2,30}\](?=\s+\[)", False),  # a component in a chain of brackets: MindIE's [batchscheduler] [ERROR]
    (r":(?=\s)", False),  # the colon after them: MindIE's "[standard_model.py:186] : message"
    (r"\d+:", False),  # pdsh-style rank numbers
    (r"(?![\w.]*(?:Error|Exception):)[\w.-]+:\s*(?=\[)", False),  # host: [..], not `OSError: [Errno 30] ...`
    # docker compose's and stern's service column, an editor's line number: `worker-1  | `, `  12 | `;
    # not a table's cell, which another `|` follows
    (rf"(?!(?:{_QUIET_LEVELS}|{_ERROR_LEVELS})\b)[A-Za-z0-9_.-]+\s+\|(?=\s)(?![^|\n]*\|)", False),
    (r"-+>?|\|", False),
    # a quoted reply's or Markdown quote's mark, not pytest's `>` before the failing line's indented source
    (r">(?= \S)", False),
)
"""Launcher and logger prefixes that come before the message."""
LAUNCHER_PREFIX = "|".join(prefix for prefix, quiet in _PREFIXES if not quiet)
"""One prefix that says where a line came from (a timestamp, a rank, a worker's or host's name, a
container's stream) or that it is an error: a line means the same after any of these. A lower level
is part of what the line says ("INFO compare failed ops: 0" counts, not a failed compare)."""
_PREFIX = re.compile(rf"^(?:\s*(?:{'|'.join(prefix for prefix, _ in _PREFIXES)}))+")


def _lowered(source: str) -> str:
    """A pattern that is one case-insensitive group, `(?i:...)`, as a case-sensitive pattern for
    lower-cased text. Python's `re` tries every alternative of a case-insensitive group at every
    position; on lowered text the same verdicts come in half the time (checked on every sample and
    corpus line), and a line's kind is judged for every new shape of a log of distinct errors. Such
    patterns are kept as source (`_SIGNAL`, `_EXIT`, `_SYMPTOM`, `_NOT_AN_ERROR`): only this form is
    ever searched, so only it is compiled."""
    assert source.startswith("(?i:") and source.endswith(")"), source[:20]
    return re.sub(r"\\.|[A-Z]", lambda m: m.group() if m.group()[0] == "\\" else m.group().lower(), source[4:-1])


_KINDS: tuple[tuple[str, re.Pattern[str] | str], ...] = (
    (EXCEPTION, _VALIDATION_DETAIL),
    (EXCEPTION, _CPP_WHAT),
    (EXCEPTION, _EXCEPTION),
    (EXCEPTION, _QUALIFIED_EXCEPTION),
    (EXCEPTION, _UNSPACED_EXCEPTION),
    (CODE, _CODE_ID),
    (CODE, _CODE_WORDS),
    (SIGNAL, _SIGNAL),
    (EXIT, _EXIT),
    (LEVEL, _LEVEL_WORDS),
    (LEVEL, _LEVEL_STAMPS),
    (TRACEBACK, _TRACEBACK),
    (SYMPTOM, _SYMPTOM),
)
"""In the order a line is judged: the first kind that matches is the line's (a kind given as source
is one case-insensitive group, judged on the lowered text)."""
_JUDGED = tuple(
    (kind, GatedPattern(_lowered(regex)), True) if isinstance(regex, str) else (kind, GatedPattern.of(regex), False)
    for kind, regex in _KINDS
)
"""_KINDS as judged: (kind, pattern, whether it reads the lowered text)."""
_NOT_AN_ERROR_LOWERED = GatedPattern(_lowered(_NOT_AN_ERROR))
_LEVELS = tuple(pattern for kind, pattern, _ in _JUDGED if kind == LEVEL)
"""The level's patterns as judged, for a prefix alone."""
_CAUGHT = re.compile(r"\b(?:with|due to|because of)\s+[\w.]*(?:Error|Exception)\(")
"""An exception a logger reports as the reason for something it went past (its repr after "with")."""
PATTERNS: tuple[str, ...] = (
    *(regex if isinstance(regex, str) else regex.pattern for _, regex in _KINDS),
    _NOT_AN_ERROR,
    _WARNING_LEVEL.pattern,
    _WARNED_FAILURE.pattern,
    _BENIGN_WARNING.pattern,
    _PREFIX.pattern,
    _QUIET_LEVEL.pattern,
    _CAUGHT.pattern,
)
"""Every regex that judges a line here: the native shape table must know those that tell digits apart."""


def error_kind(text: str) -> str | None:
    """The most telling kind of error this line reports, or None for a line that reports none.

    The prefix is judged apart from the message: under an `ERROR` prefix a traceback's indented
    code lines are not errors of their own, the unindented message is.
    """
    prefix = _PREFIX.match(text)
    rest = text if prefix is None else text[prefix.end() :]
    lowered = rest.lower()
    gated = gate_lowered(lowered)  # most lines hold none of a pattern's words: they are not searched
    if _NOT_AN_ERROR_LOWERED.search(lowered, gated):
        return None  # a counter or a warning's category, however its words read: judged once
    kind = next(
        (kind for kind, pattern, on_lowered in _JUDGED if pattern.search(lowered if on_lowered else rest, gated)),
        None,
    )
    if kind == EXCEPTION and _VALIDATION_HEADER.search(rest):
        return TRACEBACK  # the detail line under it says what failed; alone, it still says the job raised
    if prefix is None:
        return kind
    if kind == SYMPTOM and _QUIET_LEVEL.search(prefix.group()):
        return None  # a failure's word on a line its logger marked as chatter ("INFO ... not supported")
    if kind == EXCEPTION and _QUIET_LEVEL.search(prefix.group()) and not _EXCEPTION.search(rest):
        return None  # "INFO transformers.Trainer: ...": a logger's name, not a raised class
    if kind == EXCEPTION and _CAUGHT.search(rest) and _WARNING_LEVEL.search(prefix.group()):
        return None  # a warning about an exception the program caught: "Failed to import X with ImportError(...)"
    if kind in (None, SYMPTOM) and not rest.startswith("  ") and rest.strip() and _level(prefix.group()):
        # A failure's word under an error level: the level says more than the word.
        if not rest.lstrip().startswith("Traceback"):
            return LEVEL
    return kind


def _level(text: str) -> bool:
    gated = gate_text(text)
    return any(pattern.search(text, gated) for pattern in _LEVELS)


def warned(text: str) -> bool:
    """Whether a warning says that something failed (`W1201 ... Failed to get node devices`,
    `Warning: Failed to run the execution(2)!`): no error by itself, but a log whose only sign of
    trouble is such a warning said again and again failed there (see `safety_net.WARNED_REPEATS`)."""
    return (
        _WARNING_LEVEL.search(text) is not None
        and _WARNED_FAILURE.search(text) is not None
        and _BENIGN_WARNING.search(text) is None
    )


_RAY_REPEATS = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")
"""Ray's log deduplication appends this to a line that several workers printed."""


def message_of(text: str) -> str:
    """The line without its launcher and logger prefixes (and Ray's repeat count); from the exception
    name on, if it has one."""
    if text.endswith("cluster]"):
        text = _RAY_REPEATS.sub("", text)
    if any(mark in text for mark in _DETAIL_MARKS):
        # The detail lines first: their message may hold a class's name ("what():  NNAdapter C++ Exception:").
        stripped = _PREFIX.sub("", text, count=1)
        detail = _VALIDATION_DETAIL.match(stripped)
        if detail:
            return f"ValidationError: {detail.group(1)}"
        what = _CPP_WHAT.match(stripped)
        if what:
            return what.group(1).strip()
    found = _EXCEPTION.search(text)
    if found:
        return text[found.start(1) :].strip()
    return _PREFIX.sub("", text, count=1).strip() or text.strip()


def exception_name(text: str) -> str | None:
    found = _EXCEPTION.search(text)
    return found.group(1).rsplit(".", 1)[-1] if found else None
