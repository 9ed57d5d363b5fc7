"""The causes and fixes a guess lends from what the KB and the corpus already know.

A guess names a family from the nearest known failures; what to do about it is borrowed from the
closest of them that says: an entry whose examples read alike, else the fix a similar reported
failure's thread confirmed, else the package whose code raised the error (its update), else the
guessed family's own rule, the one whose examples read most alike. Each borrowed cause says where
it comes from.
"""

from __future__ import annotations

from triage.engine.advice import declared_stacks, order_fixes
from triage.engine.compiled import CompiledKB
from triage.engine.context import GROUPS, JobContext, parse_stack
from triage.engine.culprit import culprit_advice
from triage.engine.named import SETUP_KINDS, NamedFailure, named_failure
from triage.engine.nearest import Guess, ReportedCase
from triage.engine.normalize import template
from triage.engine.suggested import suggested_fixes
from triage.engine.unclaimed import ErrorLine, UnclaimedErrors
from triage.results import CauseResult, FixResult, replace

RESEMBLES_AT = 75.0
"""A neighbouring entry this similar lends its causes and fixes, marked as borrowed."""
REPORTED_AT = 70.0
"""Without such an entry, a reported failure (a corpus case) of the guessed family this similar lends
what its thread found: the root cause and the fix it confirmed. Chosen leave-thread-out on the train
split (`triage eval --leave-thread-out`): at 70 the top cause is the thread's in 24% of confirmed-fix
cases, 16% with no reported failure lent, 21% at 75."""
STACK_BONUS = 20.0
"""How much a family rule with a fix made for the job's own stack (a fix that names only it) gains over
the others in the choice of the rule to lend from, on top of its examples' similarity (0-100): a vLLM
failure that reads like any memory error borrows the rule with vLLM's flags. Leave-thread-out on the
train split: fixes 19 -> 20 of 70 at 10, 20 and 30 alike; a bonus for any fix that merely allows the
stack lost one (Triton fixes allow sglang)."""
BORROWED_PRECISION = 0.5
"""How often one of the causes lent from a resembling entry (or the guessed family's rule) is the failure's
own: leave-thread-out on the train split, 43 of the 86 guesses of the right family that lent an entry's
causes. Together they are worth this much; the rest is "not known", listed last, since the lent causes
still say more than nothing."""
REPORTED_PRECISION = 0.55
NAMED_REPORTED_PRECISION = 0.9
"""How often a lent root cause is the failure's own: leave-thread-out on the train split, where the
guessed family is right, 20 of 36 when the two logs' error lines share only common words (an
exception's template), 29 of 33 when they also share a rare word (a name, see
`nearest.RARE_WORD_FAILURES`). A lent cause's probability is its lines' similarity times this: error
lines that read alike often fail for different reasons."""


def unknown_cause() -> CauseResult:
    return CauseResult(id="unknown", title="Not known to the KB", probability=1.0)


def guess_advice(
    kb: CompiledKB,
    guess: Guess | None,
    unclaimed: UnclaimedErrors,
    lead: ErrorLine,
    context: JobContext,
    *,
    rule: str | None = None,
) -> tuple[list[CauseResult], list[FixResult], str]:
    """A guess's causes and fixes (see `_lent_advice`), with the action its error lines ask for
    themselves (see `triage.engine.suggested`) first. A log with no error that shows how it failed
    (a stall, degenerate output) names the KB's `rule` for that kind of failure: its advice is
    lent, where the KB has it."""
    kind = _rule_by_id(kb, rule)
    if kind is not None:
        causes, fixes = _advice(kb, kind[0], context)
        lent = _lent_by_rule(kb, kind, "causes and fixes")
    else:
        causes, fixes, lent = _lent_advice(kb, guess, unclaimed, lead, context)
    first, after = suggested_fixes([lead.line.text, *(e.line.text for e in unclaimed.most_telling())], context)
    return causes, first + fixes + after, lent


def _lent_advice(
    kb: CompiledKB, guess: Guess | None, unclaimed: UnclaimedErrors, lead: ErrorLine, context: JobContext
) -> tuple[list[CauseResult], list[FixResult], str]:
    """A guess's causes and fixes: a close entry's (marked as borrowed), else what a close reported
    failure's thread found, else the package whose code raised the error, else the guessed family's
    rule. Where nothing lent a fix, updating that package comes first, then the family rule's fixes.
    An error that names what is missing (see `triage.engine.named`) leads with what its name means,
    unless the failure lent from names the same. The last item says where the advice came from when
    the causes' titles do not (a sentence, or "")."""
    borrowed = _borrowed_entry(kb, guess)
    if borrowed is not None:
        causes, fixes = _advice(kb, borrowed, context)
        lent_from = f"entry:{kb.entries[borrowed].id}"
    else:
        causes, fixes, lent_from = _reported_advice(kb, guess, lead, context)
    named = named_failure(lead.message)
    if named is not None and lent_from and kb.neighbour_index.names(lent_from, named.name):
        named = None  # the failure lent from is about the same name: what it found stands
    suspect, update = culprit_advice([line for _, line in unclaimed.frames], lead.line, context)
    if named is not None:
        return named.first_of(causes), _named_fixes(named, update), ""
    if fixes:
        lent = f"Its causes and fixes are those of {kb.entries[borrowed].id}." if borrowed is not None else ""
        return causes, fixes + update, lent
    family = _family_rule(kb, guess, lead, context)
    if family is None:
        return causes, update, ""
    rule = family[0]
    if [cause.id for cause in causes] == ["unknown"]:
        if suspect is None:
            # Leave-thread-out on the train split: top causes 23 -> 25 and fixes 14 -> 15 of the 70
            # confirmed-fix cases; a family's generic causes say more than "not known".
            return (*_advice(kb, rule, context), _lent_by_rule(kb, family, "causes and fixes"))
        causes = [suspect, replace(causes[0], probability=round(1.0 - suspect.probability, 3))]
    # A reported failure whose thread confirmed no fix, or only the package known: the family's own
    # fixes after the update (train split, leave-thread-out: fixes 14 -> 17 of 70; 15 with them first).
    lent = _lent_by_rule(kb, family, "fixes after the update" if update else "fixes")
    return causes, update + _advice(kb, rule, context)[1], lent


def _named_fixes(named: NamedFailure, update: list[FixResult]) -> list[FixResult]:
    """The fixes for an error that names what is missing: updating the package that raised it, then
    what its template says (first, where the name is the job's own setting, path or port, which no
    release of the package changes). Fixes lent from failures about another name are not offered: a
    family's fixes for `main_grad` missing say nothing of `to_local` missing."""
    fix = named.fix()
    if fix is None:
        return update
    return [fix, *update] if named.kind in SETUP_KINDS else [*update, fix]


def _rule_by_id(kb: CompiledKB, rule: str | None) -> tuple[int, float | None] | None:
    """A rule named by id, where the KB has it (a KB of one's own may not): for a log with no error,
    the rule whose examples merely read most alike was another kind of failure (a Triton kernel's
    block sizes for a graph capture that hung, KV-transfer ports for a rendezvous, Inf/NaN settings
    for garbled text). Not a rule whose signatures are all switched off (overridden, or left out
    for the thread it was written from, as `triage eval --leave-thread-out` does)."""
    index = None if rule is None else _live_entry(kb, rule)
    if index is None or all(signature.off for signature in kb.signatures if signature.entry == index):
        return None
    return index, None


def _lent_by_rule(kb: CompiledKB, family: tuple[int, float | None], what: str) -> str:
    rule, similarity = family
    if similarity is None:
        return f"The {what} are those of {kb.entries[rule].id}, the KB's rule for this kind of failure."
    return (
        f"The {what} are those of {kb.entries[rule].id}, the rule of this family whose examples read "
        f"most alike ({similarity:.0f}% similar): a place to start, not a match."
    )


def _borrowed_entry(kb: CompiledKB, guess: Guess | None) -> int | None:
    if guess is None or not guess.entries or guess.entries[0][1] < RESEMBLES_AT:
        return None
    index = _live_entry(kb, guess.entries[0][0])
    # Advice from an entry of another family than the one named would contradict the heading.
    return index if index is not None and kb.entries[index].category == guess.category else None


def _live_entry(kb: CompiledKB, entry_id: str) -> int | None:
    """The index of the entry with this id that is in force: where a KB of one's own overrides a
    shipped entry, both are kept, the shipped one switched off."""
    return next((n for n, entry in enumerate(kb.entries) if entry.id == entry_id and not entry.overridden), None)


def _family_rule(kb: CompiledKB, guess: Guess | None, lead: ErrorLine, context: JobContext) -> tuple[int, float] | None:
    """The family rule of the guessed category whose examples read most like the lead error line, with a
    rule that has fixes made for the job's stack preferred, and how alike its closest example reads (0-100)."""
    if guess is None:
        return None
    rules = {
        f"entry:{entry.id}": index
        for index, entry in enumerate(kb.entries)
        if entry.family and entry.category == guess.category and not entry.overridden
    }
    examples = [(masked, label) for masked, _, label in kb.neighbour_index.documents if label in rules]
    if not examples:
        return None
    # rapidfuzz is imported at the first guess: most scans make none.
    from rapidfuzz import fuzz

    query = template(lead.message)
    # Per rule: its best example's similarity and, for ties, where that example stands (the first wins).
    best_of: dict[str, tuple[float, int]] = {}
    for at, (masked, label) in enumerate(examples):
        score = fuzz.token_set_ratio(query, masked)
        if label not in best_of or score > best_of[label][0]:
            best_of[label] = (score, at)
    best = max(
        best_of,
        key=lambda label: (best_of[label][0] + STACK_BONUS * _made_for(kb, rules[label], context), -best_of[label][1]),
    )
    return rules[best], best_of[best][0]


def _made_for(kb: CompiledKB, index: int, context: JobContext) -> float:
    """How squarely the entry has a fix for the job's stack: 1 for one that names only it, less for one
    that names it among several, 0 for none."""
    shares = [
        1.0 / max(len(values) for values in applies_to.values())
        for fix in kb.entries[index].fixes
        if (applies_to := declared_stacks(fix)) and context.fits(applies_to)
    ]
    return max(shares, default=0.0)


def _reported_advice(
    kb: CompiledKB, guess: Guess | None, lead: ErrorLine, context: JobContext
) -> tuple[list[CauseResult], list[FixResult], str]:
    """What the closest reported failure's thread found, when one of the guessed family is close and
    its log shows no other stack than the job's (a vLLM thread's cause is no cause of a Paddle job's
    failure), and its label ("" for none)."""
    unknown = unknown_cause()
    close = [(label, score) for label, score in guess.cases if score >= REPORTED_AT] if guess else []
    reported = next(
        (case for label, _ in close if (case := kb.neighbour_index.reported(label)) and _ran_like(case, context)),
        None,
    )
    if reported is None:
        return [unknown], [], ""
    label, thread, root_cause, fix, _ = reported
    score = dict(close)[label]
    named = sorted(kb.neighbour_index.rare_words_shared(label, lead.message))
    alike = f"The error lines are {score:.0f}% similar to those of {thread}"
    cause = CauseResult(
        id=f"as-reported-{label.removeprefix('case:')}",
        title=f"As in a similar reported failure: {root_cause}",
        probability=round(score / 100.0 * (NAMED_REPORTED_PRECISION if named else REPORTED_PRECISION), 3),
        how_to_tell=(
            f"{alike} and name the same {', '.join(named[:3])}; compare the two logs."
            if named
            else f"{alike}, but only in common words; compare the two logs."
        ),
    )
    # The lent cause leads even below one half: "not known" is no cause, only what is left over.
    causes = [cause, replace(unknown, probability=round(1.0 - cause.probability, 3))]
    fixes = (
        [FixResult(title="What fixed the similar reported failure", description=fix, confirmed_by=[thread])]
        if fix
        else []
    )
    return causes, fixes, label


def _ran_like(case: ReportedCase, context: JobContext) -> bool:
    """Whether a reported failure's log shows no other stack than the job's (see `JobContext.stack`)."""
    return context.fits(parse_stack(case[4])) is not False


def _one_framework(stacks: dict[str, list[str]]) -> bool:
    """Whether a fix is declared for a single framework (`vllm`, `sglang`, `mindspore`), not a group
    of jobs (`serving`, `training`) or several frameworks."""
    workloads = stacks.get("workload", [])
    return len(workloads) == 1 and workloads[0] not in GROUPS


def _advice(kb: CompiledKB, borrowed: int, context: JobContext) -> tuple[list[CauseResult], list[FixResult]]:
    """An entry's causes, lent at BORROWED_PRECISION in all (the rest is left "not known"), and its fixes."""
    entry = kb.entries[borrowed]
    share = 1.0 / max(1, len(entry.causes))
    ranked = sorted(entry.causes, key=lambda c: -c.prior)
    causes = [
        CauseResult(
            id=c.id, title=f"{c.title} (as in {entry.id})", probability=round(share, 3), how_to_tell=c.how_to_tell
        )
        for c in ranked
    ]
    # Fixes are ordered as the entry would order them with nothing in the log: by its causes' priors.
    by_prior = [replace(cause, probability=c.prior) for cause, c in zip(causes, ranked)]
    # A guess lends a fix made for one framework only to a job the log shows is of it.
    made_for_job = [
        fix for fix in entry.fixes if not _one_framework(stacks := declared_stacks(fix)) or context.fits(stacks)
    ]
    fixes, _ = order_fixes(made_for_job, by_prior, context)
    lent = [replace(cause, probability=round(cause.probability * BORROWED_PRECISION, 3)) for cause in causes]
    return lent + [replace(unknown_cause(), probability=round(1.0 - BORROWED_PRECISION, 3))], fixes
