"""triage.probing.runner and `triage probe`: real subprocesses that crash, hang, print junk, or lack torch."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from probes import _subproc
from triage.cli import probe_cmd
from triage.probing import runner
from triage.probing.models import ProbeResult


def crash(mode: str, timeout: float = 30) -> ProbeResult:
    return runner.run_probe("_crash", extra_args=["--mode", mode], timeout=timeout)


def test_list_probes_names_the_six_and_hides_test_probe() -> None:
    names = [n for n, _ in runner.list_probes()]
    assert names == ["env", "op_support", "allocator", "hccl_init", "alignment", "loss_scale"]
    assert all(desc for _, desc in runner.list_probes())


def test_segfault_is_an_error_naming_the_signal() -> None:
    result = crash("segv")
    assert result.status == "error" and "SIGSEGV" in (result.reason or "")


def test_hang_hits_the_timeout() -> None:
    result = crash("hang", timeout=1.5)
    assert result.status == "error" and "timed out after 1.5s" in (result.reason or "")
    assert result.seconds < 10


def test_junk_stdout_is_an_error() -> None:
    result = crash("junk")
    assert result.status == "error" and "not one JSON object" in (result.reason or "")


def test_nonzero_exit_is_an_error_with_last_stderr_line() -> None:
    result = crash("exit")
    assert result.status == "error" and "status 3: fatal: probe gave up" in (result.reason or "")


def test_missing_python_is_an_error() -> None:
    result = runner.run_probe("env", python="/nonexistent/bin/python")
    assert result.status == "error" and "cannot start" in (result.reason or "")


def test_unknown_probe_raises_usage_error() -> None:
    with pytest.raises(runner.UnknownProbeError):
        runner.run_probe("no_such_probe")


@pytest.fixture(scope="module")
def python_without_torch(tmp_path_factory: pytest.TempPathFactory) -> str:
    # A bare venv from the base interpreter: same Python, no site-packages, so no torch.
    venv = tmp_path_factory.mktemp("notorch") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    python = venv / "bin" / "python"
    assert subprocess.run([str(python), "-c", "import torch"], capture_output=True).returncode != 0
    return str(python)


def test_probe_without_torch_is_skipped_with_install_hint(python_without_torch: str) -> None:
    results = runner.run_probes([n for n, _ in runner.list_probes()], python=python_without_torch)
    assert [r.status for r in results] == ["skipped"] * 6
    assert "pip install 'ascend-triage[probes]'" in (results[0].reason or "")


def test_probe_python_from_env(monkeypatch: pytest.MonkeyPatch, python_without_torch: str) -> None:
    monkeypatch.setenv(runner.PYTHON_ENV, python_without_torch)
    assert runner.run_probe("alignment").status == "skipped"


def test_child_path_exposes_only_the_probes_package() -> None:
    # Not the probes' real parent, which may be triage's site-packages with its own torch.
    first = Path(_subproc.child_env()["PYTHONPATH"].split(os.pathsep)[0])
    assert [p.name for p in first.iterdir()] == ["probes"]
    assert (first / "probes" / "__init__.py").exists()


@pytest.mark.slow
def test_real_probe_through_runner() -> None:
    result = runner.run_probe("env", device="cpu")
    assert result.status == "ok" and result.device.type == "cpu"
    assert "torch-npu-mismatch" in result.ruled_out_causes


# --- the CLI command, through a parser built the way triage's main builds it --------------------


def cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="triage")
    probe_cmd.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    return int(args.func(args))


def test_cli_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("probe", "list") == 0
    assert capsys.readouterr().out.split()[0] == "env"


@pytest.mark.slow
def test_cli_finding_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    record = tmp_path / "r.json"
    record.write_text('{"init_process_group_calls": 3}')
    assert cli("probe", "run", "hccl_init", "--json", "--device", "cpu", "--record", str(record)) == 1
    [result] = json.loads(capsys.readouterr().out)
    assert result["status"] == "finding"
    assert [f["confirms"] for f in result["findings"] if f["id"] == "double-init"] == [["double-init"]]


def test_cli_probe_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("probe", "run", "_crash", "--timeout", "20") == 2
    out = capsys.readouterr().out
    assert "SIGSEGV" in out and "Traceback" not in out


def test_cli_unknown_probe_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("probe", "run", "nope") == 2
    assert "unknown probe 'nope'" in capsys.readouterr().err


def test_cli_skipped_exits_0_with_bad_python(python_without_torch: str) -> None:
    assert cli("probe", "run", "env", "--python", python_without_torch) == 0


def test_cli_usage_error_exits_2() -> None:
    with pytest.raises(SystemExit) as exc:
        cli("probe", "run", "env", "--device", "tpu")
    assert exc.value.code == 2
