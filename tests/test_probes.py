"""Every probe, run for real on this machine's CPU with the installed torch, plus the pure helpers.

Tests marked `simulated` use stand-ins (a Python PrivateUse1 backend named "npu", gloo registered
as "hccl", a fake fallback kernel) to exercise detection logic; they say nothing about real
torch_npu or HCCL.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import probes
from probes import _common, _npu, _subproc, alignment, allocator, env, hccl_init, op_support

torch = pytest.importorskip("torch")

# The ops the issue names; the full default list costs a second or two per extra op.
FIXTURE_OPS = ("bmm", "float64", "where_gather_backward", "scatter_add_backward")
# Each op runs in its own process that imports torch: on a loaded 2-core machine that alone can take
# longer than the probe's default per-op limit, which would turn a verdict into a flaky "op-timeout".
PROBE_ARGS = {"op_support": ("--ops", ",".join(FIXTURE_OPS), "--op-timeout", "120")}
ENVELOPE_KEYS = {"probe", "version", "device", "status", "findings", "seconds"}
FINDING_KEYS = {"id", "message", "evidence", "confirms", "rules_out"}


def run_module(name: str, *args: str, env_extra: dict[str, str] | None = None, as_json: bool = True) -> Any:
    cmd = [sys.executable, "-m", f"probes.{name}", *(["--json"] if as_json else []), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=_subproc.child_env(env_extra))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout) if as_json else proc.stdout


def run_script(tmp_path: Path, code: str) -> Any:
    """Run ``code`` in a fresh interpreter (fakes must not leak into pytest) and parse its stdout."""
    script = tmp_path / "sim.py"
    script.write_text(textwrap.dedent(code))
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=_subproc.child_env()
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def findings_by_id(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["id"]: f for f in result["findings"]}


@pytest.fixture(scope="module")
def cpu_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    record = tmp_path_factory.mktemp("record") / "record.json"
    record.write_text(json.dumps({"init_process_group_calls": 2, "backends": ["gloo", "gloo"]}))
    args = {**PROBE_ARGS, "hccl_init": ("--record", str(record))}
    # Each probe starts its own torch, so the situations to detect are set up once, here.
    envs = {
        "allocator": {"PYTORCH_ALLOC_CONF": "expandable_segments:True"},
        "hccl_init": {"RANK": "0", "WORLD_SIZE": "2", "HCCL_CONNECT_TIMEOUT": "120"},
    }
    # Two at a time: the machine has two cores and op_support starts its own children.
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = pool.map(lambda n: run_module(n, *args.get(n, ()), env_extra=envs.get(n)), probes.PROBES)
    return {r["probe"]: r for r in results}


@pytest.mark.slow
def test_envelope_matches_contract(cpu_results: dict[str, dict[str, Any]]) -> None:
    for name, result in cpu_results.items():
        assert ENVELOPE_KEYS <= set(result), name
        assert result["device"]["type"] == "cpu"
        assert result["status"] in ("ok", "finding", "skipped", "error")
        assert isinstance(result["seconds"], float)
        for finding in result["findings"]:
            assert set(finding) == FINDING_KEYS, (name, finding["id"])


@pytest.mark.slow
def test_at_least_five_probes_measure_on_cpu(cpu_results: dict[str, dict[str, Any]]) -> None:
    measured = [n for n, r in cpu_results.items() if r["status"] in ("ok", "finding")]
    assert len(measured) >= 5, {n: (r["status"], r.get("reason")) for n, r in cpu_results.items()}


@pytest.mark.slow
def test_op_support_ops_native_on_cpu(cpu_results: dict[str, dict[str, Any]]) -> None:
    found = findings_by_id(cpu_results["op_support"])
    assert set(found["op-verdicts"]["evidence"]["verdicts"]) == set(FIXTURE_OPS)
    assert set(found["op-verdicts"]["evidence"]["verdicts"].values()) == {"native"}
    assert "float64-default-dtype" in found["float64-native"]["rules_out"]


@pytest.mark.slow
def test_alignment_reports_tensor_and_storage_pointers(cpu_results: dict[str, dict[str, Any]]) -> None:
    found = findings_by_id(cpu_results["alignment"])
    view = found["view-alignment"]["evidence"]["slice_base[3:]"]
    assert (view["data_ptr_mod_64"], view["storage_ptr_mod_64"], view["storage_offset"]) == (12, 0, 3)
    assert found["view-alignment"]["evidence"]["slice_base[3:].clone()"]["data_ptr_mod_64"] == 0
    assert "dataloader_batch" in found["buffers-aligned"]["evidence"]
    assert "pinned-unavailable" in found


@pytest.mark.slow
def test_allocator_says_unsupported_on_cpu_and_reads_conf(cpu_results: dict[str, dict[str, Any]]) -> None:
    result = cpu_results["allocator"]
    found = findings_by_id(result)
    assert found["allocator-unsupported"]["evidence"] == {"supported": False}
    assert found["alloc-conf"]["evidence"]["env"] == {"PYTORCH_ALLOC_CONF": "expandable_segments:True"}
    assert result["status"] == "ok"


@pytest.mark.slow
def test_hccl_init_flags_partial_env_and_double_init(cpu_results: dict[str, dict[str, Any]]) -> None:
    result = cpu_results["hccl_init"]
    found = findings_by_id(result)
    assert result["status"] == "finding"
    assert found["rank-env-inconsistent"]["confirms"] == ["missing-rank-env"]
    assert "MASTER_ADDR" in found["rank-env-inconsistent"]["message"]
    assert found["double-init"]["confirms"] == ["double-init"]
    assert found["comm-env"]["evidence"]["settings"] == {"HCCL_CONNECT_TIMEOUT": "120"}
    assert found["pg-init-ok"]["evidence"]["all_reduce_ok"] is True


@pytest.mark.slow
def test_loss_scale_scaler_grows_and_backs_off_on_cpu(cpu_results: dict[str, dict[str, Any]]) -> None:
    found = findings_by_id(cpu_results["loss_scale"])
    run = found["grad-scaler-ok"]["evidence"]
    assert run["clean_step"]["scale_after"] == 2 * run["init_scale"]
    assert run["overflow_step"]["params_updated"] is False
    assert found["fp16-overflow-visible"]["evidence"]["fp16_60000x2"] == "inf"  # strict JSON, not Infinity


@pytest.mark.slow
def test_env_reports_versions(cpu_results: dict[str, dict[str, Any]]) -> None:
    found = findings_by_id(cpu_results["env"])
    assert found["versions"]["evidence"]["torch"] == torch.__version__
    assert "torch-npu-absent" in found


def run_in_process(module: Any, capfd: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run a probe's main() here; for paths that stop before any device work, a subprocess buys nothing.

    capfd, not capsys: probes write their result to file descriptor 1, not to sys.stdout.
    """
    assert module.main(list(argv)) == 0
    return capfd.readouterr().out


def test_device_override_unavailable_is_skipped(capfd: pytest.CaptureFixture[str]) -> None:
    result = json.loads(run_in_process(alignment, capfd, "--json", "--device", "cuda"))
    assert result["status"] == "skipped" and "cuda" in result["reason"]
    assert result["device"] == {"type": "cuda", "name": "unavailable", "count": 0}


def test_unknown_op_is_one_error_line_in_the_human_summary(capfd: pytest.CaptureFixture[str]) -> None:
    out = run_in_process(op_support, capfd, "--ops", "bmm,no_such_op").splitlines()
    assert out[0].startswith("op_support [cpu: ") and out[0].split("] ")[1].startswith("error")
    assert "no_such_op" in out[1] and "Traceback" not in "".join(out)


def test_stray_stdout_goes_to_stderr_not_into_the_json(capfd: pytest.CaptureFixture[str]) -> None:
    # Stands in for CANN with ASCEND_SLOG_PRINT_TO_STDOUT=1: writes to fd 1 while the probe runs.
    def noisy(ctx: _common.ProbeContext) -> list[_common.Finding]:
        os.write(1, b"[INFO] ASCENDCL(123) log line\n")
        print("python noise")
        return [_common.Finding("quiet", "ok")]

    assert _common.run_probe_main("noisy", "1", "test", noisy, ["--json", "--device", "cpu"]) == 0
    out, err = capfd.readouterr()
    assert json.loads(out)["findings"][0]["id"] == "quiet"
    assert "ASCENDCL(123)" in err and "python noise" in err


def test_op_timeouts_leave_no_verdict_and_make_an_error(capfd: pytest.CaptureFixture[str]) -> None:
    result = json.loads(run_in_process(op_support, capfd, "--json", "--ops", "bmm", "--op-timeout", "0.2"))
    assert result["status"] == "error" and "timed out after 0.2s" in result["reason"]


def test_every_default_op_is_known() -> None:
    assert set(op_support.DEFAULT_OPS) <= set(op_support.OPS)


# --- pure helpers (no subprocess) ---------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "[W compiler_depend.ts:51] Warning: CAUTION: The operator 'aten::linalg_lstsq.out' is not currently supported "
        "on the NPU backend and will fall back to run on the CPU. This may have performance implications.",
        "Warning: kernel [nanmedian.dim] is not supported by NPU currently. Now this kernel is running on CPU.",
        "CAUTION: The operator aten::logit, aten::logit_ and aten::logit.out is currently not supported on the NPU "
        "backend. Now this operator will fallback to run on the CPU and may have performance implications.",
        "The operator 'aten::x' is not currently supported on the MPS backend and will fall back to run on the CPU.",
    ],
)
def test_fallback_regex_matches_known_texts(line: str) -> None:
    assert op_support.FALLBACK_RE.search(line)


def test_fallback_regex_ignores_aicpu_notice() -> None:
    line = (
        "Warning: kernel [ArgSort] can not support dtype int32 or int64 on AiCore, Now this kernel is running on AiCpu."
    )
    assert not op_support.FALLBACK_RE.search(line)


@pytest.mark.parametrize(
    ("env_vars", "problem"),
    [
        ({"RANK": "2", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, "outside"),
        ({"RANK": "x", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, "not an integer"),
        ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "70000"}, "valid port"),
        ({"LOCAL_RANK": "0"}, "missing RANK"),
    ],
)
def test_rank_env_inconsistencies(env_vars: dict[str, str], problem: str) -> None:
    finding = hccl_init.rank_env_finding(env_vars)
    assert finding.confirms == ["missing-rank-env"] and problem in finding.message


def test_rank_env_consistent_rules_out() -> None:
    good = {
        "RANK": "1",
        "WORLD_SIZE": "2",
        "LOCAL_RANK": "1",
        "LOCAL_WORLD_SIZE": "2",
        "MASTER_ADDR": "10.0.0.1",
        "MASTER_PORT": "29500",
    }
    assert hccl_init.rank_env_finding(good).rules_out == ["missing-rank-env"]


def test_record_finding_single_and_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text('{"init_process_group_calls": 1}')
    assert hccl_init.record_finding(path).rules_out == ["double-init"]
    path.write_text('{"init_process_group_calls": 0}')
    assert hccl_init.record_finding(path).id == "no-init"
    path.write_text("not json")
    assert hccl_init.record_finding(path).id == "record-unreadable"


@pytest.mark.slow
@pytest.mark.simulated
def test_device_holders_from_fake_proc(tmp_path: Path) -> None:
    fds = tmp_path / "4242" / "fd"
    fds.mkdir(parents=True)
    (fds / "3").symlink_to("/dev/davinci0")
    (fds / "4").symlink_to("/dev/davinci_manager")  # opened by every NPU process; not a device node
    (tmp_path / "4242" / "cmdline").write_bytes(b"python\0train.py\0")
    holders, unreadable = hccl_init.device_holders(tmp_path)
    assert holders == [{"pid": 4242, "cmdline": "python train.py", "devices": ["/dev/davinci0"], "python": True}]
    assert unreadable == 0


def _matrix(**over: Any) -> dict[str, Any]:
    base = {
        "torch": "2.13.0+cpu",
        "torch_cuda": None,
        "torch_npu": "2.13.0",
        "cann": "8.3.RC1",
        "cann_source": "x",
        "ascend_home_path": None,
        "ascend_toolkit_home": None,
    }
    return {**base, **over}


@pytest.mark.parametrize(
    ("over", "confirmed"),
    [
        ({}, set()),
        ({"torch_npu": "2.12.0.post3"}, {"torch-npu-mismatch"}),
        ({"torch": "2.13.0", "torch_cuda": "13.0"}, {"cuda-torch-with-npu"}),
        ({"cann": None}, {"cann-missing"}),
    ],
)
def test_env_known_bad_combinations(over: dict[str, Any], confirmed: set[str]) -> None:
    found = env.checks(_matrix(**over))
    assert {c for f in found for c in f.confirms} == confirmed


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        ("ImportError: libhccl.so: cannot open shared object file: No such file or directory", "cann-missing"),
        (
            "RuntimeError: Two accelerators cannot be used at the same time in PyTorch: npu and cuda.",
            "cuda-torch-with-npu",
        ),
    ],
)
def test_torch_npu_import_error_mapping(error: str, cause: str) -> None:
    finding = _npu.import_error_finding(_npu.NpuImport(installed=True, version="2.13.0", error=error))
    assert finding.confirms == [cause]


def test_largest_free_block_and_recommendation() -> None:
    snapshot = [
        {"blocks": [{"size": 512, "state": "inactive"}, {"size": 4096, "state": "active_allocated"}]},
        {"blocks": [{"size": 2048, "state": "inactive"}]},
    ]
    assert allocator.largest_free_block(snapshot) == 2048
    stats = {"fragmentation_ratio": 0.5, "num_ooms": 0}
    assert "expandable_segments:True" in allocator.recommendation(stats, {})
    assert (
        allocator.recommendation(stats, {"PYTORCH_ALLOC_CONF": "expandable_segments:True"})
        == "no allocator change needed"
    )


def test_status_only_turns_finding_on_confirmation() -> None:
    info = _common.Finding("x", "m", rules_out=["a"])
    assert _common.status_of([info]) == "ok"
    assert _common.status_of([info, _common.Finding("y", "m", confirms=["b"])]) == "finding"


# --- simulated backends ---------------------------------------------------------------------------

SIMULATION = """
    import json, os, tempfile
    os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    import torch, torch.distributed as dist
    from torch.distributed import ProcessGroupGloo
    from torch.utils.backend_registration import _setup_privateuseone_for_python_backend
    from probes import _common, hccl_init, op_support

    # 1. A fallback kernel acting like torch_npu's npu_cpu_fallback: its verbatim warning on fd 2,
    #    then aten::_to_cpu. Run on the real CPU device.
    MSG = (b"[W610 18:26:03.055846726 VariableFallbackKernel.cpp:250] Warning: CAUTION: The operator "
           b"'aten::special_entr.out' is not currently supported on the NPU backend and will fall back to run "
           b"on the CPU. This may have performance implications. (function npu_cpu_fallback)\\n")
    def fake(torch, dev):
        (x,) = op_support._inputs(torch, dev, (8,))
        os.write(2, MSG)
        (y,) = torch.ops.aten._to_cpu([x])
        return torch.special.entr(y.abs())
    op_support.OPS["fake_fallback"] = fake
    fallback = op_support.run_one(torch, "cpu", "fake_fallback")
    fallback_ids = {f.id: f.confirms for f in op_support._findings([fallback], "npu")}

    # 2. A Python PrivateUse1 backend named "npu": detected as the device; it has no kernels at all.
    _setup_privateuseone_for_python_backend("npu")
    device = _common.detect_device(torch, None, npu_available=False)
    npu_records = [op_support.run_one(torch, "npu", op) for op in ("bmm", "float64")]
    npu_confirms = sorted({c for f in op_support._findings(npu_records, "npu") for c in f.confirms})

    # 3. gloo registered as "hccl".
    dist.Backend.register_backend(
        "hccl", lambda o, pg_options=None: ProcessGroupGloo(o.store, o.group_rank, o.group_size, o.timeout),
        extended_api=True, devices=["cpu"])
    with tempfile.TemporaryFile() as tmp:  # the probe writes its result to fd 1
        saved = os.dup(1)
        os.dup2(tmp.fileno(), 1)
        try:
            hccl_init.main(["--json", "--device", "cpu", "--backend", "hccl"])
        finally:
            os.dup2(saved, 1)
        tmp.seek(0)
        hccl = json.loads(tmp.read())

    print(json.dumps({"fallback": fallback, "fallback_ids": fallback_ids, "device": device.type,
                      "npu_verdicts": [r["verdict"] for r in npu_records], "npu_confirms": npu_confirms,
                      "hccl": hccl}))
"""


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_script(tmp_path_factory.mktemp("sim"), SIMULATION)


@pytest.mark.slow
@pytest.mark.simulated
def test_fake_fallback_kernel_is_detected_by_fd2_and_profiler(simulated: dict[str, Any]) -> None:
    assert simulated["fallback"]["verdict"] == "cpu_fallback"
    assert simulated["fallback"]["to_cpu_events"] == 1
    assert "aten::special_entr.out" in simulated["fallback"]["fallback_warnings"][0]
    assert simulated["fallback_ids"]["op-cpu-fallback"] == ["op-cpu-fallback"]


@pytest.mark.slow
@pytest.mark.simulated
def test_fake_npu_is_detected_and_unsupported_ops_classified(simulated: dict[str, Any]) -> None:
    assert simulated["device"] == "npu"
    assert simulated["npu_verdicts"] == ["not_supported", "not_supported"]
    assert simulated["npu_confirms"] == ["float64-default-dtype", "op-not-supported"]


@pytest.mark.slow
@pytest.mark.simulated
def test_gloo_registered_as_hccl_initialises(simulated: dict[str, Any]) -> None:
    found = findings_by_id(simulated["hccl"])
    assert found["dist-state"]["evidence"]["hccl_registered"] is True
    assert found["pg-init-ok"]["evidence"]["reported_backend"] == "hccl"
