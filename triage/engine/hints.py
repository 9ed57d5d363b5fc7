"""Words that point at a failure family, for when no known failure resembles an error closely.

The nearest-neighbour vote needs a close neighbour; a cut-off traceback, a stalled log or a message
in a framework nobody wrote an entry for often has none. Then the words around the failure still
say a lot: a frame in `capture_one_batch_size`, a `barrier` in the stack, `out of memory` in a
start-up check. Each category's words are broad on purpose; they only break ties and fill gaps.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

from triage.engine.unclaimed import TAIL_LINES


def _lazy(pattern: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """A regex compiled on first use: only the safety net reads these, and most scans never reach it
    (compiling them all took a tenth of the engine's import)."""
    return cache(lambda: re.compile(pattern, flags))


def _lazy_all(words: tuple[tuple[str, str], ...]) -> Callable[[], tuple[tuple[str, re.Pattern[str]], ...]]:
    return cache(lambda: tuple((category, re.compile(pattern, re.IGNORECASE)) for category, pattern in words))


CATEGORY_WORDS: tuple[tuple[str, str], ...] = (
    (
        "npu_oom",
        r"out of memory|\boom\b|insufficient (?:device )?memory|not enough memory|memory (?:is )?exhausted|"
        r"alloc\w* (?:device )?memory failed|malloc\w* failed|cache blocks|mem(?:ory)?[_ -]fraction|"
        r"memory[_ -]utilization|bad_alloc|memory exceeds|exceeds? (?:the )?(?:total|available) memory",
    ),
    (
        "hccl_timeout",
        r"\bhccl|\bnccl|all_?reduce|all_?gather|all_?to_?all|broadcast|\bbarrier\b|rendezvous|tcpstore|"
        r"init_process_group|process ?group|collective|watchdog|heartbeat|socket|connection (?:refused|reset)|"
        r"timed? ?out|distributed|\bcomm(?:unicator)?\b",
    ),
    (
        "segfault",
        r"segmentation|sigsegv|sigabrt|sigbus|core dump|ai ?core|vector ?core|aicpu|aiv|illegal (?:address|instruction)|"
        r"out of (?:range|bounds)|\bmte\b|\bub\b.{0,20}(?:overflow|out of)|fatal python|bus error|kernel exception|"
        r"exception.{0,30}kernel|hwts|task exception",
    ),
    (
        "nan_loss_scale",
        r"\bnan\b|\binf\b|overflow|loss[ _]scal|isfinite|nmse|precision|accuracy|all zeros|garbled|"
        r"toleran|allclose|assert_close|mismatched elements|not close",
    ),
    (
        "env_version",
        r"\bversion|mismatch|undefined symbol|shared object|no module named|importerror|modulenotfound|"
        r"set_env|\binstall|compiled with|not compiled|cuda (?:is )?not available|no cuda|\bdriver\b|glibc|libstdc|cmake|\bbuild\b|"
        r"visible[_ ]devices|device count|no npu|not available|\.so\b|incompatib|nvidia|infer device type|"
        r"device (?:is )?(?:used|busy|occupied|in use)|(?:invalid|wrong) device|device id is invalid|socversion|"
        r"soc version|conflict is caused by|conflicting dependencies|resolutionimpossible|undefined reference",
    ),
    (
        "unsupported_op",
        r"not (?:yet )?(?:supported|implemented)|unsupported|no kernel|not registered|"
        r"does not (?:has|have) any binary|fall ?back|dtype|float64|\bdouble\b|bfloat16|\bbf16\b|310p|300i|"
        r"not support|tiling|only supports?\b",
    ),
    (
        "dynamic_shape_compile",
        r"(?<!not )(?<!be )compil(?!ed with)|\bgraph|captur|dynamo|inductor|torchair|aclgraph|triton|bisheng|recompil|"
        r"tracing|torch\.compile|\bjit\b|linalg|codegen|lowering",
    ),
    ("other", r"\bp2p\b|\bsdma\b|driver internal|peer access|\bpcie\b|\becc\b|heartbeat lost|device lost"),
)
_COMPILED = _lazy_all(CATEGORY_WORDS)
STALL_WORDS: tuple[tuple[str, str, str], ...] = (
    ("dynamic_shape_compile", r"captur", "family-graph-capture-failed"),
    ("dynamic_shape_compile", r"compil|warm ?up", "first-step-online-compile-slow"),
    ("dynamic_shape_compile", r"\bgraph", "family-graph-capture-failed"),
    (
        "hccl_timeout",
        r"\bbarrier\b|rendezvous|process group|initiali[sz]ing (?:hccl|nccl|distributed)|\bhccl\b|waiting for",
        "family-dist-rendezvous-failure",
    ),
)
"""A log that ends on one of these, with no error at all, stopped while doing it: a stall, of this
family, whose advice is that of the KB's rule for the work it stopped in (a graph capture, a first
compile, a rendezvous): the rule whose examples merely read most alike was another family's kind of
failure (a Triton kernel's block sizes for a capture that hung)."""
_STALLS = cache(
    lambda: tuple((category, re.compile(pattern, re.IGNORECASE), rule) for category, pattern, rule in STALL_WORDS)
)


_FINISHED = _lazy(
    r"(?:compil\w*|captur\w*|warm ?up|graph)[\w ]{0,20}?(?:[ _]time\b|\btook\b|\btakes? \d|\bfinished\b|\bdone\b|\bcompleted?\b|"
    r"\bsucce\w*|\bin \d|:\s*\d|\b(?:en|dis)abled\b|\bskipped\b)",
    re.IGNORECASE,
)
"""A banner that says the work finished, how long it took ("compile_time:0:00:00.12", "Graph
capturing finished in 12 secs"), or a setting rather than work under way ("Compilation disabled, using
eager mode", "PIECEWISE compilation enabled"): the job went past it."""


def stall_of(text: str) -> tuple[str, str] | None:
    """The family of what a last line says the job was doing and the KB rule for a job stopped
    there, or None for a line that is no stall."""
    if _FINISHED().search(text):
        return None
    return next(((category, rule) for category, pattern, rule in _STALLS() if pattern.search(text)), None)


def stall_category(text: str) -> str | None:
    """The family of what a last line says the job was doing, or None for a line that is no stall."""
    found = stall_of(text)
    return None if found is None else found[0]


def word_votes(text: str) -> dict[str, float]:
    """One vote for each category whose words the text holds, shared when several do."""
    found = [category for category, pattern in _COMPILED() if pattern.search(text)]
    return {category: 1.0 / len(found) for category in found}


_REPEATED_PHRASE = _lazy(r"((?:\w+[^\w\n]+){1,4}?)\1{5,}")
"""A phrase of one to four words six times in a row ("and the English and the English ...")."""
_REPEATED_SYMBOLS = _lazy(r"([^\w\s]{2,4})\1{7,}")
"""Two to four symbols eight times in a row ("}*}*}*}*"), mixed (a rule of one symbol is a separator)."""
_REPEATED_CJK = _lazy(r"([\u4e00-\u9fff]{1,3})\1{5,}")
_PATH_SYMBOLS = frozenset("./\\-=_")
"""What `../../../` and `-=-=-=` are made of: paths and banners, not generated text."""


_GENERATED = _lazy(
    r"generated[ _]text|[\"']?\b(?:text|content|output|response|answer|completion)[\"']?\s*[:=]|输出|回答|回复",
    re.IGNORECASE,
)
"""Where a line hands over text a model generated: a serving log's `Generated text: '...'`, an
OpenAI-style JSON `"text":"..."`, a demo's `output: ...`."""
_REPEATED_SENTENCE = _lazy(r"((?:[^\W\d_][\w'’-]*[^\w\n]+){5,14}?)\1{2,}")
"""Inside generated text, a sentence of five to fourteen words said three times in a row ("The cat sits
on the mat. The cat sits on the mat. ..."): a model looping, where a logger's line would not."""
_ONE_SYMBOL_RUN = _lazy(r"([^\w\s])\1{23,}")
"""One symbol 24 times in a row: a banner outside generated text, a model stuck on one token inside it."""
_SCRIPTS = _lazy(
    "|".join(
        f"({letters}+)"
        for letters in (
            "[A-Za-z\u00c0-\u024f]",  # Latin
            "[\u0370-\u03ff]",  # Greek
            "[\u0400-\u04ff]",  # Cyrillic
            "[\u0590-\u05ff]",  # Hebrew
            "[\u0600-\u06ff]",  # Arabic
            "[\u0900-\u097f]",  # Devanagari
            "[\u0e00-\u0e7f]",  # Thai
            "[\u1100-\u11ff\uac00-\ud7af]",  # Hangul
            "[\u3040-\u30ff]",  # Kana
            "[\u3400-\u4dbf\u4e00-\u9fff]",  # CJK ideographs
        )
    )
)
MIXED_SCRIPTS = 3
SCRIPT_SWITCHES = 5
"""A line that hops between three writing systems five times is token soup (wrong logits decoded),
not a translation: real bilingual output keeps to two and switches rarely. It needs no marker of
generated text: threads paste the garbled answer bare, or under a harness's own key (`"prediction"`),
and no line of the corpus's healthy logs, or of its failure logs but garbled answers, hops so."""


def degenerate_text(text: str) -> bool:
    """Whether a line holds generated text gone degenerate: a phrase of words (not numbers), a mix
    of symbols (not a path or a banner) or CJK characters repeated over and over, or a soup of
    writing systems; or, where the line hands over generated text, one symbol repeated or mostly
    punctuation."""
    if any(re.search(r"[^\W\d_]", m.group(1)) for m in _REPEATED_PHRASE().finditer(text)):
        return True
    if any(
        len(set(unit := m.group(1))) >= 2 and not set(unit) <= _PATH_SYMBOLS for m in _REPEATED_SYMBOLS().finditer(text)
    ):
        return True
    if _REPEATED_CJK().search(text) is not None or _script_soup(text):
        return True
    generated = _GENERATED().search(text)
    if generated is None:
        return False
    handed_over = text[generated.end() :]
    return _REPEATED_SENTENCE().search(handed_over) is not None or _garbled(handed_over)


_EVALUATION_REPORT = _lazy(
    r"\|\s*Tasks\s*\|\s*Version\s*\||\bOverall report table\b"
    r"|\|\s*(?:acc(?:uracy)?|acc_norm|exact_match|mean_acc|pass@\d+)\s*\|"
    r"|\b(?:accuracy|exact_match|mean_acc|pass@\d+)\b\s*[:=]\s*0?\.\d+|\bmean[ _]acc(?:uracy)?\s+0?\.\d+",
    re.IGNORECASE,
)
"""An evaluation harness's report: lm-eval's table, evalscope's, a metric column, or an accuracy score
(`mean acc 0.54145`, as sglang's MMMU benchmark prints it)."""


def evaluation_report(text: str) -> bool:
    """Whether a line is part of an evaluation's report of scores (a table of them, or an accuracy line)."""
    return _EVALUATION_REPORT().search(text) is not None


PUNCTUATION_SOUP = 0.6
SOUP_SPAN = 60
"""Generated text whose first characters (this many, spaces aside) are mostly punctuation is
fill from wrong logits (",.,. and,.,,,,,,.,0 and,, and"): prose carries a few percent, code a third."""


def _garbled(generated: str) -> bool:
    if _ONE_SYMBOL_RUN().search(generated):
        return True
    visible = "".join(generated.split())[:SOUP_SPAN]
    return len(visible) == SOUP_SPAN and sum(not c.isalnum() for c in visible) >= PUNCTUATION_SOUP * SOUP_SPAN


def _script_soup(text: str) -> bool:
    scripts = [m.lastindex for m in _SCRIPTS().finditer(text)]
    switches = sum(1 for before, after in zip(scripts, scripts[1:]) if before != after)
    return len(set(scripts)) >= MIXED_SCRIPTS and switches >= SCRIPT_SWITCHES


_LOG_MARKS = _lazy(r"[\d\[\]:|=<>{}()/\\#@]")
"""What a logger's line, a path, a banner or a counter carries, and generated text does not."""


def looped_output(tail: list[str]) -> int | None:
    """Where (an index into `tail`) the last lines show generated text stuck in a loop, one
    repeat per line: most of the last non-blank lines (as many as the scan keeps of a log's end) are
    one short line of words that carries nothing a logger, a path or a counter writes. None when
    they do not."""
    last = [(n, text.strip()) for n, text in enumerate(tail) if text.strip()][-TAIL_LINES:]
    if len(last) < TAIL_LINES:
        return None
    counts: dict[str, int] = {}
    for _, text in last:
        counts[text] = counts.get(text, 0) + 1
    top = max(counts, key=counts.__getitem__)
    looped = counts[top] >= 0.6 * len(last) and len(top) <= 60
    if not looped or _LOG_MARKS().search(top) or not re.search(r"[^\W\d_]", top):
        return None
    if top.endswith(("...", "…")) or stall_category(top):  # a job waiting on something says so
        return None
    return next(n for n, text in reversed(last) if text == top)
