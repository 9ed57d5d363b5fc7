"""Probes speak for the device they ran on: on cpu or cuda they never lower an NPU diagnosis."""

from __future__ import annotations

import json

import pytest

from tests.conftest import SAMPLES
from tests.test_hostile import HOSTILE, bounded_triage
from triage.engine.probe_evidence import apply_probe_results

FLOAT64_LOG = SAMPLES / "unsupported_op-flux-rope-float64-8rank.log"
OP_SUPPORT_ON_CPU = json.loads((HOSTILE / "op_support_cpu.json").read_text())
"""What the real op_support probe printed on this CPU-only machine: float64 'runs natively on cpu'."""


def _scan(*extra: str) -> dict:
    done = bounded_triage("scan", "--json", "--no-progress", *extra, str(FLOAT64_LOG), timeout=60)
    assert done.returncode == 1
    return json.loads(done.stdout)


def test_scan_probe_on_this_cpu_machine_never_lowers_the_diagnosis():
    # The probe Python is a stand-in that prints the recorded CPU result: same path through the CLI,
    # without importing torch in one child per op.
    plain = _scan()
    probed = _scan("--probe", "--probe-python", str(HOSTILE / "probe_python_cpu.sh"))
    assert probed["probes"][0]["device"]["type"] == "cpu"
    before = {d["id"]: d["confidence"] for d in plain["diagnoses"]}
    after = {d["id"]: d["confidence"] for d in probed["diagnoses"]}
    assert [d["id"] for d in probed["diagnoses"]] == [d["id"] for d in plain["diagnoses"]]
    assert all(after[i] >= before[i] for i in before)
    notes = probed["diagnoses"][0]["probe_notes"]
    assert notes and all("not testable here" in note and "ran on cpu" in note for note in notes)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_device_bound_verdicts_elsewhere_change_nothing(scan_text, device):
    result = scan_text(FLOAT64_LOG.read_text())
    probed = apply_probe_results(result, [{**OP_SUPPORT_ON_CPU, "device": {"type": device, "name": "x", "count": 1}}])
    assert [(d.id, d.confidence, d.causes[0].id) for d in probed.diagnoses] == [
        (d.id, d.confidence, d.causes[0].id) for d in result.diagnoses
    ]


def test_the_same_verdicts_on_an_npu_do_count(scan_text):
    result = scan_text(FLOAT64_LOG.read_text())
    probed = apply_probe_results(result, [{**OP_SUPPORT_ON_CPU, "device": {"type": "npu", "name": "910B", "count": 8}}])
    assert any("ruled out by op_support (ran on npu)" in note for note in probed.diagnoses[0].probe_notes)


def test_a_generic_cause_can_still_be_confirmed_on_cpu(scan_text):
    from tests.test_probe_evidence import OOM, _allocator_result

    result = scan_text(OOM)
    on_cpu = {
        **_allocator_result(["true-capacity"], ["fragmentation"]),
        "device": {"type": "cpu", "name": "x", "count": 1},
    }
    top = apply_probe_results(result, [on_cpu]).diagnoses[0]
    assert top.causes[0].id == "true-capacity"
    assert any("fragmentation: not testable here: allocator (ran on cpu)" in note for note in top.probe_notes)
