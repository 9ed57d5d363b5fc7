"""Errors that any bug in any job raises name no failure of the KB: only the safety net's guess may
speak for them. An entry that claims one of them diagnoses every such bug as its own (a serving
job's NoneType error was once read as Megatron's fused backward at 0.51)."""

import pytest

from triage.kbtools.evaluate import FALSE_ALARM_CONFIDENCE

GENERIC_ERRORS = [
    "AttributeError: 'NoneType' object has no attribute 'dtype'",
    "AttributeError: 'NoneType' object has no attribute 'add_'",
    "AttributeError: 'tuple' object has no attribute 'to'",
    "AttributeError: 'dict' object has no attribute 'model_type'",
    "TypeError: 'NoneType' object is not subscriptable",
    "TypeError: unsupported operand type(s) for +: 'int' and 'NoneType'",
    "ValueError: too many values to unpack (expected 2)",
    "ValueError: invalid literal for int() with base 10: 'abc'",
    "KeyError: 'input_ids'",
    "IndexError: list index out of range",
    "ZeroDivisionError: division by zero",
    "RecursionError: maximum recursion depth exceeded while calling a Python object",
    "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
    "UnboundLocalError: local variable 'outputs' referenced before assignment",
    "AssertionError",
    "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x512 and 256x128)",
    "PermissionError: [Errno 13] Permission denied: '/data/output'",
]


@pytest.mark.parametrize("error", GENERIC_ERRORS)
def test_a_generic_python_error_is_only_guessed_at(scan_text, error):
    log = f'Traceback (most recent call last):\n  File "/workspace/app/run.py", line 42, in main\n{error}\n'
    claimed = [
        (d.id, d.confidence)
        for d in scan_text(log).diagnoses
        if not d.guess and d.severity in ("critical", "error") and d.confidence >= FALSE_ALARM_CONFIDENCE
    ]
    assert claimed == []
