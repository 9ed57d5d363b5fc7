"""Redaction: no case of the leak corpus survives `triage scan --redact` in text, JSON or report output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.test_hostile import HOSTILE
from triage.cli.main import main
from triage.redact import SECRET, Redactor, mask_secret_values

LEAKS = yaml.safe_load((HOSTILE / "leaks.yaml").read_text(encoding="utf-8"))
ERROR = "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.97 GiB total capacity)"


def _outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> dict[str, str]:
    """What `triage scan` prints as text and JSON, and its report, for the log in tmp_path."""
    log, report = tmp_path / "job.log", tmp_path / "report.md"
    found = {}
    for name, extra in (("text", ["--report", str(report)]), ("json", ["--json"])):
        assert main(["scan", "--no-progress", "--no-shipped-kb", "--kb", str(_oom_kb()), *flags, *extra, str(log)]) == 1
        found[name] = capsys.readouterr().out
    found["report"] = report.read_text(encoding="utf-8")
    return found


def _oom_kb() -> Path:
    from tests.conftest import ROOT

    return ROOT / "kb" / "npu_oom"


@pytest.mark.parametrize("case", LEAKS, ids=[case["line"][:30] for case in LEAKS])
def test_no_leak_survives_any_output(tmp_path, capsys, monkeypatch, case):
    monkeypatch.setenv("COLUMNS", "400")  # no wrapping: a secret cut in two would pass unseen
    (tmp_path / "job.log").write_text(f"step 1 loss 2.3\n{case['line']} | {ERROR}\n", encoding="utf-8")
    plain = _outputs(tmp_path, capsys)
    assert all(secret in plain["json"] for secret in case["secrets"])  # the case does reach the output
    for name, output in _outputs(tmp_path, capsys, "--redact").items():
        if name == "json":
            output = json.dumps(json.loads(output), ensure_ascii=False)
        leaked = [secret for secret in case["secrets"] if secret in output]
        assert not leaked, f"{name} output leaks {leaked}:\n{output}"


def test_what_the_log_means_survives():
    redact = Redactor()
    assert (
        redact("EZ1001: aclnnCumsum failed at 10:00:01 in c10::Error")
        == "EZ1001: aclnnCumsum failed at 10:00:01 in c10::Error"
    )
    assert redact("the password is wrong") == "the password is wrong"


def test_secret_env_values_are_masked_even_unredacted():
    environment = mask_secret_values({"ASCEND_TOKEN": "abc", "HCCL_EXEC_TIMEOUT": "1800", "NPU_API_KEY": "k"})
    assert environment == {"ASCEND_TOKEN": SECRET, "HCCL_EXEC_TIMEOUT": "1800", "NPU_API_KEY": SECRET}


def test_hosts_named_by_the_environment_are_masked_in_the_log():
    from triage.report import redactor_for
    from triage.results import ScanResult

    redact = redactor_for(ScanResult(), [], {"host": "dgx-a100-07", "MASTER_ADDR": "node17"})
    assert redact("rank 3 on dgx-a100-07 lost node17:29500") == "rank 3 on <host> lost <host>:29500"
