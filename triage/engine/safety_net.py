"""The safety net: a diagnosis for an error that no KB entry claims.

A log that holds an error gets a diagnosis even when no rule knows it: the error line itself, the
category of the nearest known failures, the entries it resembles, a query to paste into the
trackers and the `triage kb new` command that would capture it. Its confidence says it is a guess.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

from triage.engine.codes import Decoded
from triage.engine.compiled import CompiledKB
from triage.engine.context import JobContext
from triage.engine.guess_advice import guess_advice, unknown_cause
from triage.engine.error_lines import TRACEBACK, WARNED, exception_name, message_of
from triage.engine.hints import degenerate_text, evaluation_report, looped_output, stall_category, stall_of, word_votes
from triage.engine.nearest import HEALTHY, Guess
from triage.engine.search_query import search_query
from triage.engine.unclaimed import FRAME, ErrorLine, UnclaimedErrors, frame_of
from triage.results import Diagnosis, EvidenceLine, FixResult, replace

ID = "unrecognised-error"
MAX_CONFIDENCE = 0.45
"""Below the 0.5 that CI gates and healthy-log checks use: a guess never reads as a finding."""
MIN_CONFIDENCE = 0.15
# How much each kind of sign counts in the vote, beside the neighbours' (see `nearest`). Chosen
# leave-one-out on the corpus's train split with no KB entries at all (the safety net alone):
# codes and family words each added more than five points there.
CODE_WEIGHT = 1.0
"""A known error code in an error line (times the line's salience)."""
WORD_WEIGHT = 1.0
"""A family's words in an error line (times the line's salience)."""
FRAME_WEIGHT = 0.3
"""A family's words in the traceback frames."""
STALL_TAIL_LINES = 2
"""The last lines of an ended log in which a quiet stall's banner is looked for (see `_quiet_failure`)."""
STALL = "stall"
DEGENERATE = "degenerate"
REPORT = "report"
"""An evaluation report and no error: threads paste one when the scores came out lower than expected."""
NUMERICAL_FAMILY = "nan_loss_scale"
"""The family of degenerate output and of a report of scores: numbers gone wrong on the device."""
DEGENERATE_RULE = "family-degenerate-output"
"""Its rule: a serving stack's quantized, fused or graph-mode path, as the advice for both (the rule
whose examples read most alike, for garbled text, was the Inf/NaN settings of a training run)."""
WARNED_REPEATS = 3
"""How often a warning that something failed must recur to count as the failure. In the train split,
logs that hold nothing stronger and say such a warning three times or more are failures (paddle-lite
#10432, volcano #4773), and no healthy log does."""
SECOND_OPINION_LINES = 4
SECOND_OPINIONS = 2
"""Families a second opinion adds at most: with the rule's own, a reader's first three."""
SPLIT_VOTE = 0.5
"""Beside a specific entry, a second opinion is given only where the nearest lines' vote for its own
family is below this share (or goes to another): on the train split, leave-thread-out, it then
stands beside 76 of 225 specific diagnoses and puts the right family in the first three for 9 more
cases; offered beside every one (210 of 225), for 2 more than that."""
SECOND_GUESS_SHARE = 0.1
"""A runner-up is reported when its share of the vote is at least this fraction of the winner's."""
_BARE_TRACEBACK = re.compile(r"\s*Traceback \(most recent call last\):?\s*$")
_BARE_HEADING = re.compile(r"\s*[\w.]*(?:error|exception|failure)s?\s*:?\s*$", re.IGNORECASE)
"""A heading with no message ("Error:", "RuntimeError:") over the line that says what failed."""


def diagnose_unclaimed(
    kb: CompiledKB, unclaimed: UnclaimedErrors, context: JobContext, *, need_neighbours: bool = False
) -> list[Diagnosis]:
    """The guess for the most telling unclaimed errors (or, without any, for a log that stopped on a
    stall banner), and the runner-up family when it came close; none when there is nothing to
    report, when the errors read like a healthy run's chatter, or (need_neighbours) when no known
    failure resembles them."""
    telling = _telling(unclaimed)
    if not telling and not need_neighbours:
        telling = _cut_traceback(unclaimed)
    quiet = None
    if not telling and not need_neighbours:
        telling, quiet = _quiet_failure(unclaimed)
    # A stall or a report of scores is a question about the job, not an error it raised.
    warning = quiet in (STALL, REPORT)
    if not telling:
        return []
    lead = telling[0]
    decoded: list[tuple[Decoded, float]] = []
    family, rule = _quiet_kind(quiet, lead)
    if quiet:
        # No error line: error neighbours say nothing of it, what the log shows last does.
        guess = kb.neighbour_index.guess([], {family: 1.0})
    else:
        decoded = [(found, e.salience) for e in telling for found in kb.code_table.decode(e.message)]
        frames = " ".join(name for name, _ in unclaimed.frames)
        votes = _word_votes(telling, frames)
        for found, salience in decoded:
            votes[found.category] = votes.get(found.category, 0.0) + CODE_WEIGHT * salience
        guess = kb.neighbour_index.guess([(e.message, e.salience) for e in telling], votes, frames, catch_all=True)
    if (guess is None or guess.score == 0.0) and need_neighbours:
        return []
    if guess is not None and guess.category == HEALTHY:
        return []
    category = guess.category if guess else "other"
    strength = guess.share * max(0.0, guess.score - 55.0) / 45.0 if guess else 0.0
    confidence = round(MIN_CONFIDENCE + (MAX_CONFIDENCE - MIN_CONFIDENCE) * strength * lead.salience, 3)
    causes, fixes, lent = guess_advice(kb, guess, unclaimed, lead, context, rule=rule)
    primary = Diagnosis(
        id=ID,
        category=category,
        title=_title(lead, quiet),
        severity="warning" if warning else "error",
        confidence=confidence,
        score=round(confidence, 3),
        summary=" ".join(filter(None, [_summary(guess, category, quiet) + _codes_text(decoded), lent])),
        generic=True,
        evidence=[e.line for e in telling[:4]],
        evidence_count=sum(e.count for e in telling),
        causes=causes,
        fixes=fixes + _next_steps(lead),
        probes=[],
        rank=lead.line.rank,
        first_seen=lead.order,
        guess=True,
        resembles=[entry for entry, _ in (guess.entries if guess else ())],
        extracted={"neighbour_similarity": guess.score, "vote_share": guess.share} if guess else {},
    )
    return [primary] + _alternatives(primary, guess)


def _telling(unclaimed: UnclaimedErrors) -> list[ErrorLine]:
    """The most telling error lines but bare traceback headers (they say nothing of what failed, and
    their words are in every entry's examples), bare headings after the lines that say what failed."""
    lines = [e for e in unclaimed.most_telling() if not _BARE_TRACEBACK.match(e.message)]
    return _warnings_that_count(sorted(lines, key=lambda e: _BARE_HEADING.match(e.message) is not None))


def _warnings_that_count(telling: list[ErrorLine]) -> list[ErrorLine]:
    """Warnings that something failed count only in a log with no error line at all, and only when
    said again and again: a failure warned about once is most often one the program got past."""
    errors = [e for e in telling if e.kind != WARNED]
    return errors or [e for e in telling if e.count >= WARNED_REPEATS]


def second_opinion(kb: CompiledKB, rule: Diagnosis, shown: set[str], *, disputed: bool = False) -> list[Diagnosis]:
    """The families that a rule's own lines resemble, when they are not the rule's nor `shown`: a
    rule reads a phrasing, and the nearest known failures of the same lines are a second opinion
    (alternatives at the lowest confidence, ranked below the rule), up to SECOND_OPINIONS families.
    Beside a specific entry (`disputed`), only where the vote for its family is split (SPLIT_VOTE)."""
    lines = [line for line in rule.evidence if line.supports is None][:SECOND_OPINION_LINES]
    guess = kb.neighbour_index.guess([(message_of(line.text), 1.0) for line in lines])
    if (
        guess is None
        or guess.score == 0.0
        or (disputed and guess.category == rule.category and guess.share >= SPLIT_VOTE)
    ):
        return []
    ranked = [(guess.category, guess.share), *guess.others]
    return [
        Diagnosis(
            id=f"{ID}-alternative",
            category=category,
            title=f"Or {_kind(category)[0]}: {rule.title}",
            severity="error",
            confidence=MIN_CONFIDENCE,
            score=MIN_CONFIDENCE,
            summary=f"The lines {rule.id} matched also resemble known {_kind(category)[1]} ({share:.0%} of the nearest lines' vote).",
            generic=True,
            evidence=lines,
            evidence_count=len(lines),
            causes=[unknown_cause()],
            fixes=[],
            probes=[],
            rank=rule.rank,
            first_seen=rule.first_seen,
            guess=True,
            extracted={"vote_share": share},
        )
        for category, share in _close(guess, ranked)
        if category not in shown
    ][:SECOND_OPINIONS]


def _alternatives(primary: Diagnosis, guess: Guess | None) -> list[Diagnosis]:
    """The runner-up families as diagnoses of their own, when they had enough of the winner's vote:
    families that close are all worth a look, and the ranking says which came first."""
    if guess is None:
        return []
    return [
        replace(
            primary,
            id=f"{ID}-alternative",
            category=category,
            title=f"Or {_kind(category)[0]}: {primary.title}",
            confidence=MIN_CONFIDENCE,
            score=MIN_CONFIDENCE,
            summary=f"Another family the same error lines point at ({share:.0%} of the vote).",
            causes=[unknown_cause()],
            fixes=[fix for fix in primary.fixes if fix.kind == "diagnostic"],
            resembles=[],
            extracted={"vote_share": share},
        )
        for category, share in _close(guess, guess.others)
    ]


def _close(guess: Guess, families: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """Of these (family, share of the vote) of a guess, those with enough of the winner's share to be
    worth a look (a healthy run's chatter never is)."""
    return [
        (family, share) for family, share in families if family != HEALTHY and share >= SECOND_GUESS_SHARE * guess.share
    ]


_KINDS = {
    "unsupported_op": ("an unsupported-operator failure", "unsupported-operator failures"),
    "npu_oom": ("an out-of-memory failure", "out-of-memory failures"),
    "hccl_timeout": ("an HCCL / distributed communication failure", "HCCL / distributed communication failures"),
    "segfault": ("a segfault / device-exception crash", "segfault / device-exception crashes"),
    "nan_loss_scale": ("a NaN / precision failure", "NaN / precision failures"),
    "env_version": ("an environment / version failure", "environment / version failures"),
    "dynamic_shape_compile": ("a compile / graph-capture failure", "compile / graph-capture failures"),
    "other": ("another kind of failure", "failures of no named kind"),
}
"""Each category as a reader says it: (one failure, with its article; several)."""


def _kind(category: str) -> tuple[str, str]:
    return _KINDS.get(category, (f"a {category} failure", f"{category} failures"))


def _word_votes(telling: list[ErrorLine], frames: str) -> dict[str, float]:
    """Family words in the error lines and in the frames of the traceback, weighted below neighbours."""
    votes: dict[str, float] = {}
    sources = [(e.message, WORD_WEIGHT * e.salience) for e in telling]
    sources.append((frames, FRAME_WEIGHT))
    for text, weight in sources:
        for category, vote in word_votes(text).items():
            votes[category] = votes.get(category, 0.0) + weight * vote
    return votes


def _quiet_kind(quiet: str | None, lead: ErrorLine) -> tuple[str, str | None]:
    """How a log with no error shows it failed: its family and the KB's rule for it, the work a stall
    stopped in (see `hints.stall_of`), or numbers gone wrong on the device for degenerate output and
    low scores. ("other", None) for a log with an error line."""
    if quiet in (DEGENERATE, REPORT):
        return NUMERICAL_FAMILY, DEGENERATE_RULE
    found = stall_of(lead.message) if quiet == STALL else None
    return found if found is not None else ("other", None)


def _quiet_failure(unclaimed: UnclaimedErrors) -> tuple[list[ErrorLine], str | None]:
    """A log without errors that still shows it failed: its last lines hold generated text that
    degenerated into one phrase or symbol pair repeated, within a line or line after line (numbers
    gone wrong on the device), say it was capturing, compiling or waiting when it stopped (a stall), or
    report an evaluation's scores."""
    for source, tail in unclaimed.tails.items():
        at = looped_output([text for _, text in tail])
        if at is not None:
            return [_tail_line(source, *tail[at])], DEGENERATE
    quiet_kinds = (
        (DEGENERATE, None, degenerate_text),
        (STALL, STALL_TAIL_LINES, stall_category),
        (REPORT, None, evaluation_report),
    )
    for kind, lines, found in quiet_kinds:
        for source, tail in unclaimed.tails.items():
            if kind == STALL and source not in unclaimed.ended:
                continue  # a log still being written stops, for now, on whatever it printed last
            for number, text in reversed(tail[-lines:] if lines else tail):
                if found(text):
                    return [_tail_line(source, number, text)], kind
    return [], None


def _tail_line(source: str, number: int, text: str) -> ErrorLine:
    """A line of a log's end that shows it failed, as the lead of a guess."""
    line = EvidenceLine(source=source, line=number, text=text.strip()[:500])
    return ErrorLine(order=0, kind=TRACEBACK, line=line, message=message_of(text))


def _cut_traceback(unclaimed: UnclaimedErrors) -> list[ErrorLine]:
    """A traceback whose error line never came: the paste (or the process) was cut before the
    exception was printed, but the job raised, and its frames say where."""
    if not unclaimed.frames:
        return []
    frame = unclaimed.frames[-1][1]
    # The statement under the last frame (when the log ends with it) says what the job was doing.
    code = next((text for number, text in unclaimed.tails.get(frame.source, []) if number == frame.line + 1), "")
    statement = message_of(code) if code and not FRAME.search(code) else ""
    return [ErrorLine(order=0, kind=TRACEBACK, line=frame, message=f"{message_of(frame.text)} {statement}".strip())]


def _codes_text(decoded: list[tuple[Decoded, float]]) -> str:
    meanings = dict.fromkeys(f"{found.code}: {found.meaning}" for found, _ in decoded)
    return f" Codes in the log: {'; '.join(meanings)}." if meanings else ""


_WORKING_OPERATOR = re.compile(r"\bcurrent working operator name is (\w+)")


def _title(lead: ErrorLine, quiet: str | None) -> str:
    if quiet == DEGENERATE:
        return f"Degenerate output, with no error: {lead.message[:90]}"
    if quiet == STALL:
        return f"The log ends while the job was busy, with no error: {lead.message[:90]}"
    if quiet == REPORT:
        return f"An evaluation report, with no error: {lead.message[:90]}"
    frame = FRAME.search(lead.message) if lead.kind == TRACEBACK else None
    if frame:
        statement = lead.message[frame.end() :].strip()
        return f"A traceback cut off before its error line, in {frame_of(frame)}" + (
            f": {statement[:80]}" if statement else ""
        )
    name = exception_name(lead.message)
    operator = _WORKING_OPERATOR.search(lead.message)
    if name and operator:
        # torch_npu's "The Inner error is reported as above. ..." spends the title before naming the operator.
        return f"Unrecognised {name} in {operator.group(1)} (its inner error is reported above it)"
    if name:
        # After the exception's name as the message spells it, qualified or not (pydantic_core.….ValidationError).
        said = lead.message.partition(f"{name}:")[2].strip() or lead.message
        return f"Unrecognised {name}: {said[:90]}"
    return f"Unrecognised error: {lead.message[:100]}"


def _summary(guess: Guess | None, category: str, quiet: str | None) -> str:
    known = _kind(category)[1]
    if quiet == DEGENERATE:
        return (
            "No error in the log, but this output repeats one phrase or symbol pair over and over: "
            "generation from NaN / Inf or otherwise wrong logits, a numerical fault on the device path "
            "(a quantized or low-precision kernel, a graph-mode or multi-node path)."
        )
    if quiet == REPORT:
        return (
            "No error in the log, but it reports an evaluation's scores. If they are lower than the same model "
            "scores elsewhere (on GPUs, an earlier release, the model card), the usual causes are numerical: a "
            "quantized or low-precision kernel, graph mode or a fused operator, the precision mode of the NPU stack."
        )
    if quiet == STALL:
        head = "No error in the log, but it stops on this line: the job hung or was killed here"
    else:
        head = "No KB entry knows this error"
    if guess is None:
        return f"{head}, and no known failure resembles it."
    if guess.score:
        head += f". Its closest known failures are {known} ({guess.share:.0%} of the vote, {guess.score:.0f}% similar)"
    else:
        head += f". Its words point at {known}"
    resembles = ", ".join(f"{entry} ({score:.0f}%)" for entry, score in guess.entries)
    return head + (f"; it resembles {resembles}." if resembles else ".")


def _capture_command(source: str, line: int) -> str:
    """`triage kb new` for the lead line: from its file, or, for a stream (`<stdin>`, a job's `<job>`
    output), from the log saved to a file (`--from <stdin>` was a shell redirection, not a file)."""
    lines = f"--lines {line}-{line}"
    if source.startswith("<") and source.endswith(">"):
        return f"triage kb new {lines} < saved.log   # the {source[1:-1]} log, saved to a file"
    return f"triage kb new --from {shlex.quote(source)} {lines}"


def _next_steps(lead: ErrorLine) -> list[FixResult]:
    # A cut traceback's lead is a frame: its path and line number are masked away, its file and function are the words to search.
    from urllib.parse import quote_plus  # with ipaddress, 8 ms of every scan's start-up otherwise

    frame = FRAME.search(lead.message) if lead.kind == TRACEBACK else None
    query = search_query(frame_of(frame) if frame else lead.message)
    source, line = lead.line.source, lead.line.line
    return [
        FixResult(
            title="Search the trackers for this message",
            description=f"Query: {query}",
            commands=[f"https://github.com/search?type=issues&q={quote_plus(query)}"],
            kind="diagnostic",
        ),
        FixResult(
            title="Capture it as a KB entry once you know the fix",
            commands=[_capture_command(source, line)],
            kind="diagnostic",
        ),
    ]
