"""The action an error message asks for, offered as the message's own fix."""

from __future__ import annotations

from triage.engine.context import JobContext
from triage.engine.suggested import suggested_fixes

# Error lines as pasted in public threads (the real corpus's train split).
FORKED = (
    "RuntimeError: Cannot re-initialize NPU in forked subprocess. To use NPU with multiprocessing, "
    "you must use the 'spawn' start method"
)
BATCHED = (
    "This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer "
    "sequences. Please increase max_num_batched_tokens or decrease max_model_len. [type=value_error"
)
BLOCKING = "If you want to get the accurate stacktrace, please set the environment variable ASCEND_LAUNCH_BLOCKING=1."
MEANT = (
    "error: unknown type name 'SparseAttentionScoreTilingData'; did you mean "
    "'SparseAttn::SparseAttentionScoreTilingData'?"
)


def test_an_action_the_message_asks_for_comes_first_quoted():
    (fix,), after = suggested_fixes([FORKED], JobContext())
    assert fix.title == "Do what the message says: Use the 'spawn' start method"
    assert "you must use the 'spawn' start method" in fix.description and not after
    (fix,), _ = suggested_fixes(["RuntimeError: NPU out of memory.", BATCHED], JobContext())
    assert fix.title == "Do what the message says: Increase max_num_batched_tokens or decrease max_model_len"


def test_the_action_ends_where_a_cann_message_glues_its_next_field():
    # gansulong's ATC log, as pasted: "Reason: ..." then "Solution: ..." with no space before it.
    atc = (
        "E10001: Value [-1] for parameter [Inputs] is invalid. Reason: maybe you should set input_shape to specify "
        "its shapeSolution: Try again with a valid argument."
    )
    (fix,), _ = suggested_fixes([atc], JobContext())
    assert fix.title == "Do what the message says: Set input_shape to specify its shape"


def test_a_way_to_look_closer_is_a_diagnostic_after_the_fixes():
    first, (look,) = suggested_fixes([BLOCKING], JobContext())
    assert not first and look.kind == "diagnostic" and "ASCEND_LAUNCH_BLOCKING=1" in look.title
    assert look.env == {"ASCEND_LAUNCH_BLOCKING": "1"}  # for `--json` readers, as the KB's fixes give theirs


def test_no_action_no_fix():
    for message in (
        "Please check the log for details.",  # how to look, and said by every tool
        "ValueError: Use {backend} instead",  # a message template, not filled in
        "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB",
        MEANT,  # a compiler's guess: right once in six in the corpus
    ):
        assert suggested_fixes([message], JobContext()) == ([], [])


def test_a_guess_offers_what_its_error_line_asks_for(scan_text):
    result = scan_text(
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.10/site-packages/frob/pool.py", line 3, in grow\n'
        "FrobPoolError: the widget pool is exhausted; please increase frob_pool_size in frob.yaml\n"
    )
    guess = result.diagnoses[0]
    assert guess.id == "unrecognised-error"
    assert guess.fixes[0].title == "Do what the message says: Increase frob_pool_size in frob.yaml"
    assert guess.fixes[1].title == "Upgrade frob to a release that fixes this error"


def test_a_family_rule_offers_what_its_own_line_asks_for_first(scan_text):
    (family,) = [d for d in scan_text(FORKED + "\n").diagnoses if d.family]
    assert family.fixes[0].title == "Do what the message says: Use the 'spawn' start method"
    assert len(family.fixes) > 1  # the rule's own fixes follow


def test_a_setting_the_log_shows_in_force_is_not_suggested_again():
    context = JobContext()
    context.observe("export ASCEND_LAUNCH_BLOCKING=1")
    assert suggested_fixes([BLOCKING], context) == ([], [])
