"""Injected into a `triage run` child through PYTHONPATH; records what a log cannot show.

Counts torch.distributed.init_process_group calls (including ones that raise "trying to initialize
the default process group twice"), records the allocator config env vars, counts CPU-fallback
warnings that reach Python's warnings module, and writes a sidecar JSON to $TRIAGE_RECORD_PATH
after each init call and at exit. Ranks other than 0 write to $TRIAGE_RECORD_PATH.rank<N>, and a
process that never called init (a launcher such as torchrun) only writes when no record exists.

Rules: standard library only at import time (torch is patched lazily, when the job imports
torch.distributed, so a job without torch is unaffected); chain to any sitecustomize this one
shadows; never let an instrumentation failure reach the job.
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import re
import sys
import warnings
from typing import Any

_ALLOC_CONF_VARS = ("PYTORCH_NPU_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")
_FALLBACK_RE = re.compile(r"fall ?back to (?:run on )?(?:the )?CPU", re.IGNORECASE)
_PATCH_TARGETS = ("torch.distributed", "torch.distributed.distributed_c10d")
_HERE = os.path.dirname(os.path.abspath(__file__))

_record: dict[str, Any] = {
    "pid": os.getpid(),
    "argv": list(sys.argv),
    "init_process_group_calls": 0,
    "backends": [],
    "init_errors": [],
    "alloc_conf": {k: os.environ[k] for k in _ALLOC_CONF_VARS if k in os.environ},
    "rank_env": {k: os.environ[k] for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE") if k in os.environ},
    # Only warnings that reach Python (MPS-style). torch_npu writes its fallback warning straight
    # to fd 2; the log scanner counts those in the merged output stream.
    "cpu_fallback_warnings": 0,
}


def _record_path() -> str | None:
    path = os.environ.get("TRIAGE_RECORD_PATH")
    if not path:
        return None
    rank = os.environ.get("RANK")
    # Every rank inherits the same path; ranks other than 0 get their own file instead of clobbering it.
    return f"{path}.rank{rank}" if rank not in (None, "", "0") else path


def _dump(at_exit: bool = False) -> None:
    try:
        path = _record_path()
        if path is None:
            return
        # A process that never called init (e.g. the torchrun launcher) must not overwrite the
        # record of the worker that did; it only creates the file when nobody else has.
        if at_exit and _record["init_process_group_calls"] == 0 and os.path.exists(path):
            return
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(_record, fh)
        os.replace(tmp, path)
    except Exception:
        pass


def _wrap_init(original: Any) -> Any:
    if getattr(original, "__triage_wrapped__", False):
        return original

    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        _record["init_process_group_calls"] += 1
        _record["backends"].append(str(kwargs.get("backend", args[0] if args else None)))
        calls = _record["init_process_group_calls"]
        if calls > 1:
            # A marker in the job's own output, so the log scan sees a second init even when the
            # job catches the error it raises.
            print(f"[triage] init_process_group called {calls} times in this process", file=sys.stderr, flush=True)
        try:
            return original(*args, **kwargs)
        except BaseException as exc:
            _record["init_errors"].append(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            raise
        finally:
            _dump()

    init_process_group.__triage_wrapped__ = True  # type: ignore[attr-defined]
    init_process_group.__wrapped__ = original  # type: ignore[attr-defined]
    init_process_group.__doc__ = original.__doc__
    return init_process_group


def _patch(module: Any) -> None:
    try:
        if hasattr(module, "init_process_group"):
            module.init_process_group = _wrap_init(module.init_process_group)
    except Exception:
        pass


class _PatchLoader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader) -> None:
        self._inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self._inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._inner.exec_module(module)
        _patch(module)


class _PatchFinder(importlib.abc.MetaPathFinder):
    """Patches init_process_group right after torch.distributed is imported, whenever that is."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _PATCH_TARGETS:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchLoader(spec.loader)
                return spec
        return None


def _count_fallback_warnings() -> None:
    original = warnings.showwarning

    def showwarning(message: Any, *args: Any, **kwargs: Any) -> None:
        if _FALLBACK_RE.search(str(message)):
            _record["cpu_fallback_warnings"] += 1
        original(message, *args, **kwargs)

    warnings.showwarning = showwarning


def _chain_previous_sitecustomize() -> None:
    """Run the sitecustomize this file shadows (the job's own, or the distribution's)."""
    search = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", search)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the job's own sitecustomize failing is its business, not ours to hide
        print(f"triage: the job's sitecustomize failed: {type(exc).__name__}: {exc}", file=sys.stderr)


def _install() -> None:
    try:
        sys.meta_path.insert(0, _PatchFinder())
        for name in _PATCH_TARGETS:  # already imported (unusual this early, but cheap to handle)
            if name in sys.modules:
                _patch(sys.modules[name])
        _count_fallback_warnings()
        atexit.register(_dump, True)
    except Exception:
        pass


_install()
_chain_previous_sitecustomize()
