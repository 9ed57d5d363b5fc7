from triage.engine.probe_evidence import apply_probe_results

OOM = (
    "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.97 GiB total capacity; "
    "20.13 GiB already allocated; 20.13 GiB current active; 1.01 GiB free; 50.61 GiB reserved in total by PyTorch)"
)


def _allocator_result(confirms, rules_out):
    finding = {
        "id": "x",
        "message": "inactive split 30 GiB",
        "evidence": {},
        "confirms": confirms,
        "rules_out": rules_out,
    }
    return {"probe": "allocator", "status": "finding", "findings": [finding]}


def test_confirmed_cause_rises(scan_text):
    result = scan_text(OOM)
    before = {c.id: c.probability for c in result.diagnoses[0].causes}
    after = apply_probe_results(result, [_allocator_result(["true-capacity"], ["fragmentation"])])
    top = after.diagnoses[0]
    assert top.causes[0].id == "true-capacity"
    assert top.causes[0].probability > before["true-capacity"]
    assert top.confidence >= result.diagnoses[0].confidence
    assert any("ruled out by allocator" in note for note in top.probe_notes)
    assert after.probes[0]["probe"] == "allocator"


def test_malformed_probe_output_is_ignored(scan_text):
    result = scan_text(OOM)
    after = apply_probe_results(result, [{"probe": "junk", "findings": ["not a dict", None]}])
    assert [d.id for d in after.diagnoses] == [d.id for d in result.diagnoses]
