"""Distributed start-up: rank env consistency, HCCL/NCCL settings, a world-size-1 process group on
the device, the init_process_group count from a `triage run` record, and leftover device holders.

The world-size-1 check has run on CPU with gloo (and gloo registered as "hccl"). NEVER RUN with
real HCCL on an NPU or NCCL on a GPU.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from probes._common import Finding, ProbeContext, one_line, run_probe_main

NAME = "hccl_init"
VERSION = "1.0"
DESCRIPTION = "torch.distributed init, rank env consistency, HCCL_* settings, leftover device processes"

RANK_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "RANK_TABLE_FILE")
REQUIRED_FOR_ENV_INIT = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
COMM_ENV_RE = re.compile(r"^(TORCH_)?(HCCL|NCCL)_|^P2P_HCCL_")
DEVICE_NODE_RE = re.compile(r"^/dev/(davinci\d+|nvidia\d+)$")
# torch_npu's own advice: "set the timeout duration of HCCL_CONNECT_TIMEOUT to 300 seconds or more".
MIN_CONNECT_TIMEOUT_S = 300


def _as_int(env: dict[str, str], name: str) -> int | None:
    try:
        return int(env[name])
    except (KeyError, ValueError):
        return None


def rank_env_problems(env: dict[str, str]) -> list[str]:
    problems = []
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_PORT"):
        if name in env and _as_int(env, name) is None:
            problems.append(f"{name}={env[name]!r} is not an integer")
    rank, world = _as_int(env, "RANK"), _as_int(env, "WORLD_SIZE")
    local, local_world = _as_int(env, "LOCAL_RANK"), _as_int(env, "LOCAL_WORLD_SIZE")
    port = _as_int(env, "MASTER_PORT")
    if world is not None and world < 1:
        problems.append(f"WORLD_SIZE={world} must be >= 1")
    if rank is not None and world is not None and not 0 <= rank < world:
        problems.append(f"RANK={rank} is outside [0, WORLD_SIZE={world})")
    if local is not None and local_world is not None and not 0 <= local < local_world:
        problems.append(f"LOCAL_RANK={local} is outside [0, LOCAL_WORLD_SIZE={local_world})")
    if local_world is not None and world is not None and local_world > world:
        problems.append(f"LOCAL_WORLD_SIZE={local_world} exceeds WORLD_SIZE={world}")
    if port is not None and not 0 < port < 65536:
        problems.append(f"MASTER_PORT={port} is not a valid port")
    if "MASTER_ADDR" in env and not env["MASTER_ADDR"].strip():
        problems.append("MASTER_ADDR is empty")
    return problems


def rank_env_finding(env: dict[str, str]) -> Finding:
    present = {k: env[k] for k in RANK_VARS if k in env}
    missing = [k for k in REQUIRED_FOR_ENV_INIT if k not in env]
    if not present:
        return Finding(
            "rank-env-absent",
            "no launcher rank variables set (fine for a standalone run; a "
            "distributed job needs RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)",
            {},
        )
    problems = rank_env_problems(env)
    if missing and "RANK_TABLE_FILE" not in env:
        problems.insert(0, f"missing {', '.join(missing)}")
    if problems:
        return Finding("rank-env-inconsistent", "; ".join(problems), present, confirms=["missing-rank-env"])
    return Finding("rank-env-ok", "rank variables are complete and consistent", present, rules_out=["missing-rank-env"])


def comm_env_finding(env: dict[str, str]) -> Finding:
    settings = {k: v for k, v in sorted(env.items()) if COMM_ENV_RE.match(k)}
    notes = []
    timeout = _as_int(env, "HCCL_CONNECT_TIMEOUT")
    if timeout is not None and timeout < MIN_CONNECT_TIMEOUT_S:
        notes.append(
            f"HCCL_CONNECT_TIMEOUT={timeout}s is below the {MIN_CONNECT_TIMEOUT_S}s torch_npu recommends for large jobs"
        )
    message = f"{len(settings)} HCCL/NCCL setting(s) in force" + (f"; {'; '.join(notes)}" if notes else "")
    return Finding("comm-env", message, {"settings": settings, "notes": notes})


def dist_state(torch: Any, device_type: str) -> dict[str, Any]:
    dist = torch.distributed
    if not dist.is_available():
        return {"available": False}
    backend_map = dict(getattr(dist.Backend, "default_device_backend_map", {}))
    return {
        "available": True,
        "initialized_in_probe": dist.is_initialized(),
        "backends_registered": list(dist.Backend.backend_list),
        "hccl_registered": "hccl" in dist.Backend.backend_list,
        "default_backend_for_device": backend_map.get(device_type),
    }


def init_check(torch: Any, device_type: str, backend: str, timeout_s: float) -> Finding:
    """World-size-1 process group on an in-memory store, plus one all_reduce on the device.

    HCCL creates its communicator lazily at the first collective, so init alone proves little.
    """
    dist = torch.distributed
    started = time.monotonic()
    evidence: dict[str, Any] = {"backend": backend, "world_size": 1}
    try:
        dist.init_process_group(
            backend, store=dist.HashStore(), rank=0, world_size=1, timeout=datetime.timedelta(seconds=timeout_s)
        )
        evidence["reported_backend"] = dist.get_backend()
        t = torch.ones(4, device=torch.device(device_type))
        dist.all_reduce(t)
        evidence["all_reduce_ok"] = bool(t.cpu().eq(1).all())
    except Exception as exc:
        evidence["error"] = one_line(exc)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    evidence["seconds"] = round(time.monotonic() - started, 3)
    if "error" in evidence:
        return Finding(
            "pg-init-failed",
            f"world-size-1 {backend} process group failed: {evidence['error']}",
            evidence,
            confirms=["dist-backend-unavailable"],
        )
    return Finding(
        "pg-init-ok",
        f"world-size-1 {backend} process group and all_reduce work on {device_type}",
        evidence,
        rules_out=["dist-backend-unavailable"],
    )


def record_finding(path: Path) -> Finding:
    try:
        record = json.loads(path.read_text())
        calls = int(record["init_process_group_calls"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return Finding("record-unreadable", f"cannot read init count from {path}: {one_line(exc)}", {"path": str(path)})
    evidence = {"path": str(path), "init_process_group_calls": calls, "backends": record.get("backends", [])}
    if calls > 1:
        return Finding(
            "double-init",
            f"init_process_group was called {calls} times in the recorded run",
            evidence,
            confirms=["double-init"],
        )
    if calls == 0:
        return Finding("no-init", "init_process_group was never called in the recorded run", evidence)
    return Finding(
        "single-init", "init_process_group was called once in the recorded run", evidence, rules_out=["double-init"]
    )


def _ancestors() -> set[int]:
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            pid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def device_holders(proc_root: Path = Path("/proc")) -> tuple[list[dict[str, Any]], int]:
    """Processes with /dev/davinciN or /dev/nvidiaN open (Linux only, best effort).

    Returns the holders and the number of processes whose fds could not be read.
    """
    skip, holders, unreadable = _ancestors(), [], 0
    for pid_dir in proc_root.glob("[0-9]*"):
        pid = int(pid_dir.name)
        if pid in skip:
            continue
        try:
            devices = sorted({t for fd in (pid_dir / "fd").iterdir() if DEVICE_NODE_RE.match(t := os.readlink(fd))})
            # Read in the same guard: the process may exit between its fds and its cmdline.
            cmdline = (pid_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            unreadable += 1
            continue
        if devices:
            holders.append(
                {"pid": pid, "cmdline": cmdline[:200], "devices": devices, "python": "python" in cmdline.split(" ")[0]}
            )
    return holders, unreadable


def leftover_finding() -> Finding:
    if not Path("/proc").is_dir():
        return Finding("leftover-scan-unavailable", "no /proc here; cannot tell which processes hold the device", {})
    nodes = [p for p in Path("/dev").glob("*") if DEVICE_NODE_RE.match(str(p))]
    if not nodes:
        return Finding("leftover-scan-no-devices", "no /dev/davinci* or /dev/nvidia* nodes on this host", {})
    holders, unreadable = device_holders()
    evidence = {"holders": holders, "unreadable_processes": unreadable, "device_nodes": sorted(map(str, nodes))}
    if holders:
        pids = ", ".join(str(h["pid"]) for h in holders)
        return Finding(
            "leftover-process", f"other process(es) hold the device: {pids}", evidence, confirms=["leftover-process"]
        )
    if unreadable:
        return Finding(
            "leftover-scan-partial", f"no holders among readable processes; {unreadable} unreadable", evidence
        )
    return Finding(
        "no-leftover-process", "no other process holds a device node", evidence, rules_out=["leftover-process"]
    )


def body(ctx: ProbeContext) -> list[Finding]:
    env = dict(os.environ)
    state = dist_state(ctx.torch, ctx.device.type)
    findings = [
        Finding("dist-state", "torch.distributed state in this probe process", state),
        rank_env_finding(env),
        comm_env_finding(env),
    ]
    if ctx.args.record:
        findings.append(record_finding(Path(ctx.args.record)))
    if state["available"] and not ctx.args.no_init:
        backend = ctx.args.backend or state["default_backend_for_device"] or "gloo"
        findings.append(init_check(ctx.torch, ctx.device.type, backend, ctx.args.init_timeout))
    findings.append(leftover_finding())
    return findings


def _add_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--record", help="sidecar JSON written by `triage run` (counts init_process_group calls)")
    parser.add_argument("--backend", help="backend for the world-size-1 check (default: the device's default)")
    parser.add_argument("--no-init", action="store_true", help="skip the world-size-1 process group check")
    # Well under the runner's 60 s per probe, so a hanging init becomes a finding, not a killed probe.
    parser.add_argument("--init-timeout", type=float, default=20.0, help="seconds for the process group check")


def main(argv: list[str] | None = None) -> int:
    return run_probe_main(NAME, VERSION, DESCRIPTION, body, argv, _add_args)


if __name__ == "__main__":
    sys.exit(main())
