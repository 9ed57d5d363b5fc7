"""`triage run` instrumentation: a real job calling init_process_group twice on CPU (gloo)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from triage.instrument.launch import launch

TWICE = """
    import torch.distributed as dist
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        dist.init_process_group(backend="gloo", rank=0, world_size=1)
    except ValueError as exc:
        print("second init:", exc)
    dist.destroy_process_group()
    print("job done")
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_job(
    tmp_path: Path, code: str, *, python: str = sys.executable, env: dict[str, str] | None = None
) -> tuple[int, str, Path]:
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(code))
    record = tmp_path / "record.json"
    proc = launch([python, str(script)], record, env={**os.environ, **(env or {})}, cwd=tmp_path)
    out, _ = proc.communicate(timeout=120)
    return proc.returncode, out.decode(errors="replace"), record


@pytest.mark.slow
def test_double_init_is_counted(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    env = {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
        "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True",
    }
    rc, out, record_path = run_job(tmp_path, TWICE, env=env)
    assert rc == 0, out
    assert "trying to initialize the default process group twice" in out and "job done" in out
    record = json.loads(record_path.read_text())
    assert record["init_process_group_calls"] == 2
    assert record["backends"] == ["gloo", "gloo"]
    assert record["init_errors"] == ["ValueError: trying to initialize the default process group twice!"]
    assert record["alloc_conf"] == {"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"}


def test_existing_sitecustomize_still_runs(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import builtins\nbuiltins.JOB_HOOK = 'ran'\n")
    rc, out, record_path = run_job(tmp_path, "print('hook', JOB_HOOK)", env={"PYTHONPATH": str(theirs)})
    assert (rc, out.strip()) == (0, "hook ran")
    assert json.loads(record_path.read_text())["init_process_group_calls"] == 0


def test_job_without_torch_is_unaffected(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    code = """
        try:
            import torch
        except ImportError:
            print("no torch, fine")
    """
    rc, out, record_path = run_job(tmp_path, code, python=str(venv / "bin" / "python"))
    assert (rc, out.strip()) == (0, "no torch, fine")
    assert record_path.exists()


def test_other_ranks_write_their_own_record(tmp_path: Path) -> None:
    rc, _, record_path = run_job(tmp_path, "pass", env={"RANK": "3"})
    assert rc == 0
    assert not record_path.exists()
    assert Path(f"{record_path}.rank3").exists()
