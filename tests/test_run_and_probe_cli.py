"""`triage run` and `triage scan --probe`, run as a user would, for real on the CPU build of torch."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.test_cli_scan import OOM, triage

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow  # real torch jobs and probes: the second step of .ci/run

DOUBLE_INIT = """
import os, socket
import torch.distributed as dist
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
dist.init_process_group("gloo", rank=0, world_size=1)
print("step 1 | loss 2.31", flush=True)
dist.init_process_group("gloo", rank=0, world_size=1)
"""


def test_run_double_init_reports_two_calls_and_the_double_init_entry(tmp_path: Path):
    script = tmp_path / "double_init.py"
    script.write_text(DOUBLE_INIT)
    proc = triage("run", "--json", "--", sys.executable, str(script))
    assert proc.returncode == 1  # the job's own exit code: it died on the second init
    events = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    summary = events[-1]
    assert summary["event"] == "summary"
    assert summary["init_process_group_calls"] == 2
    top = summary["diagnoses"][0]
    assert (top["id"], top["category"]) == ("process-group-double-init", "hccl_timeout")
    assert any("confirmed by run-record" in note for note in top["probe_notes"])
    assert any(e["event"] == "diagnosis" for e in events[:-1])
    assert b"step 1 | loss 2.31" in proc.stderr  # the job's output still reaches the user


def test_run_passes_the_exit_code_and_reports_a_missing_command():
    assert triage("run", "--", sys.executable, "-c", "raise SystemExit(3)").returncode == 3
    proc = triage("run", "--", "/nonexistent/binary")
    assert proc.returncode == 2 and b"cannot start" in proc.stderr
    assert triage("run").returncode == 2


def test_scan_probe_runs_the_probes_of_the_top_diagnosis(tmp_path: Path):
    log = tmp_path / "train.log"
    log.write_text(OOM)
    proc = triage("scan", "--json", "--probe", str(log))
    data = json.loads(proc.stdout)
    assert proc.returncode == 1
    assert [p["probe"] for p in data["probes"]] == ["allocator"]
    assert data["probes"][0]["device"]["type"] == "cpu"
    assert data["diagnoses"][0]["id"] == "npu-out-of-memory"
