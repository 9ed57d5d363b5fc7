"""The compiled-KB cache is data: planted files cannot run code, KB sets live side by side, LRU bounded."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from kb_helpers import entry_data, write_entry
from tests.conftest import ROOT
from triage.engine import hs_parts, kb_cache, literal_gate, load_engine_kb
from triage.kb import cache_files
from triage.engine.compiled import TRIGGER_PATTERNS
from triage.engine.scanner import Scanner
from triage.kb import loader
from triage.kb.loader import KBError, load_kb


class _Planted:
    """Unpickling this runs `touch MARK`: what an attacker with write access to the cache would plant."""

    def __init__(self, mark: Path) -> None:
        self.mark = mark

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.system, (f"touch {self.mark}",))


def test_planted_pickle_and_garbage_never_run(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    mark = tmp_path / "pwned"
    evil = pickle.dumps(_Planted(mark))
    user = tmp_path / "kb"
    write_entry(user, entry_data("planted"))
    key = kb_cache.fingerprint([user]) + "-strict"
    for name in (f"kb-{key}.pickle", f"kb-{key}.json", f"kb-{key}.cache", "kb-0.pickle"):
        (cache / name).write_bytes(evil)
    env = {**os.environ, "PYTHONPATH": str(ROOT), cache_files.CACHE_DIR_ENV: str(cache)}
    code = (
        f"from triage.engine import load_engine_kb; kb, e = load_engine_kb([{str(user)!r}], strict=True, "
        "include_shipped=False); print(len(kb.entries))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0 and int(done.stdout) == 1, done.stderr
    assert not mark.exists()
    assert not list(cache.glob("*.pickle")) and not list(cache.glob("*.json"))  # former formats are cleared out


def test_kb_sets_are_cached_side_by_side_and_evicted_least_recently_used(tmp_path, monkeypatch):
    monkeypatch.setenv(cache_files.CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(kb_cache, "MAX_FILES", 2)
    kbs = []
    for name in ("a", "b", "c"):
        write_entry(tmp_path / name, entry_data(f"entry-{name}"))
        kbs.append([str(tmp_path / name)])
    first, _ = load_engine_kb(kbs[0], include_shipped=False)
    load_engine_kb(kbs[1], include_shipped=False)
    assert len(list((tmp_path / "cache").glob("kb-*.cache"))) == 2
    again, _ = load_engine_kb(kbs[0], include_shipped=False)  # a hit: "a" becomes the most recent
    assert again == first and again.prefilter_state == first.prefilter_state
    os.utime(kb_cache._path(kb_cache.fingerprint([Path(kbs[1][0])])), (1, 1))
    load_engine_kb(kbs[2], include_shipped=False)
    kept = {path.name for path in (tmp_path / "cache").glob("kb-*.cache")}
    assert kept == {kb_cache._path(kb_cache.fingerprint([Path(kb[0])])).name for kb in (kbs[0], kbs[2])}


def test_cache_round_trip_keeps_every_field(engine_kb):
    (restored, errors), rows = kb_cache._from_bytes(kb_cache._to_bytes((engine_kb, ["x.yaml:1: bad"])))
    assert restored == engine_kb and errors == ["x.yaml:1: bad"]
    assert restored.prefilter_state == engine_kb.prefilter_state
    # The engine's gated patterns (error lines, job context), with the literals worked out for them.
    assert rows == literal_gate.gate_rows() and len(rows) > 40
    assert any(literals for _, _, literals in rows)


def test_the_cache_keeps_the_neighbours_word_model(engine_kb):
    (restored, _), _ = kb_cache._from_bytes(kb_cache._to_bytes((engine_kb, [])))
    counted = engine_kb.neighbour_index
    assert restored.word_counts == counted.word_counts() and "_word_model" in vars(restored.neighbour_index)
    messages = [("RuntimeError: frobnicator failed with code 4242 in aclnnFoo", 1.0)]
    assert restored.neighbour_index.guess(messages) == counted.guess(messages)
    # A KB less some neighbours counts its own (the cached model holds their words).
    label = next(label for _, _, label in engine_kb.neighbours if label.startswith("case:"))
    assert restored.without_neighbours(frozenset({label})).word_counts is None


def test_a_truncated_cache_is_rebuilt_not_fatal(engine_kb):
    content = kb_cache._to_bytes((engine_kb, []))
    with pytest.raises(ValueError):
        kb_cache._from_bytes(content[:-1])


def test_a_build_the_cache_cannot_spare_is_announced_and_a_hit_is_not(tmp_path, monkeypatch):
    monkeypatch.setenv(cache_files.CACHE_DIR_ENV, str(tmp_path / "cache"))
    user = tmp_path / "kb"
    write_entry(user, entry_data("announced"))
    builds: list[str] = []
    for _ in range(2):
        load_engine_kb([str(user)], include_shipped=False, building=lambda: builds.append("build"))
    assert builds == ["build"]


def test_a_clean_build_serves_strict_and_lenient_loads_alike(tmp_path, monkeypatch):
    monkeypatch.setenv(cache_files.CACHE_DIR_ENV, str(tmp_path / "cache"))
    user = tmp_path / "kb"
    write_entry(user, entry_data("clean"))
    builds: list[str] = []
    for strict in (False, True, False):
        load_engine_kb([str(user)], include_shipped=False, strict=strict, building=lambda: builds.append("build"))
    assert builds == ["build"]
    # A lenient build that skipped a broken entry is no strict load's: that one still builds (and raises).
    (user / "broken.yaml").write_text("id: broken\ntitle: [unclosed\n")
    kb, errors = load_engine_kb([str(user)], include_shipped=False, building=lambda: builds.append("lenient"))
    assert errors and [e.id for e in kb.entries] == ["clean"]
    with pytest.raises(KBError):
        load_engine_kb([str(user)], include_shipped=False, strict=True, building=lambda: builds.append("strict"))
    assert builds == ["build", "lenient", "strict"]


def _compiled_patterns(monkeypatch) -> list[str]:
    """Every regex that goes through a hyperscan compile from now on."""
    seen: list[str] = []
    compile_run = hs_parts.compile_run

    def recording(hyperscan, patterns, compiled):  # type: ignore[no-untyped-def]
        seen.extend(pattern for pattern, _, _ in patterns)
        return compile_run(hyperscan, patterns, compiled)

    monkeypatch.setattr(hs_parts, "compile_run", recording)
    return seen


def test_a_kb_directory_added_compiles_only_its_own_patterns(tmp_path, monkeypatch):
    monkeypatch.setenv(cache_files.CACHE_DIR_ENV, str(tmp_path / "cache"))
    base, mine = tmp_path / "base", tmp_path / "mine"
    for name in ("alpha", "beta"):
        write_entry(base, entry_data(name))
    write_entry(mine, entry_data("gamma", category="other"))
    load_engine_kb([str(base)], include_shipped=False)
    compiled = _compiled_patterns(monkeypatch)
    kb, _ = load_engine_kb([str(base), str(mine)], include_shipped=False)
    assert any("GAMMA" in pattern for pattern in compiled)
    assert not any("ALPHA" in pattern or "BETA" in pattern for pattern in compiled)
    assert not set(TRIGGER_PATTERNS) & set(compiled)  # the fixed words travel with the first directory
    assert [(e.id, e.layer) for e in kb.entries] == [("alpha", 0), ("beta", 0), ("gamma", 1)]
    scanner = Scanner(kb)
    scanner.feed_text("RuntimeError: ZQX-ALPHA synthetic failure\nRuntimeError: ZQX-GAMMA synthetic failure\n")
    assert {d.id for d in scanner.result().diagnoses} == {"alpha", "gamma"}


def test_a_damaged_database_file_is_compiled_again(tmp_path, monkeypatch):
    monkeypatch.setenv(cache_files.CACHE_DIR_ENV, str(tmp_path / "cache"))
    base, mine = tmp_path / "base", tmp_path / "mine"
    write_entry(base, entry_data("alpha"))
    write_entry(mine, entry_data("gamma"))
    load_engine_kb([str(base)], include_shipped=False)
    parts = list((tmp_path / "cache").glob("hs-*.part"))
    assert parts
    for part in parts:
        part.write_bytes(b'["x"]\nnot a database')
    kb, _ = load_engine_kb([str(base), str(mine)], include_shipped=False)  # another set: the KB cache misses
    scanner = Scanner(kb)
    scanner.feed_text("RuntimeError: ZQX-ALPHA synthetic failure\n")
    assert [d.id for d in scanner.result().diagnoses] == ["alpha"]


def test_a_directory_loaded_before_is_not_parsed_again(tmp_path, monkeypatch):
    monkeypatch.setenv(cache_files.CACHE_DIR_ENV, str(tmp_path / "cache"))
    user = tmp_path / "kb"
    write_entry(user, entry_data("kept"))
    (user / "broken.yaml").write_text("id: broken\ntitle: [unclosed\n")
    first, first_errors = load_kb([user], strict=False)
    parsed: list[Path] = []
    parse = loader.load_entry
    monkeypatch.setattr(loader, "load_entry", lambda path, **kw: parsed.append(path) or parse(path, **kw))
    again, errors = load_kb([user], strict=False)
    assert not parsed
    assert again.entries == first.entries and [str(e) for e in errors] == [str(e) for e in first_errors]
    assert again.sources["kept"].line("signatures", 0) == first.sources["kept"].line("signatures", 0) > 1
    with pytest.raises(KBError, match="broken.yaml"):  # a strict load still refuses what was skipped
        load_kb([user], strict=True)
    write_entry(user, entry_data("kept", title="Edited"))
    edited, _ = load_kb([user], strict=False)
    assert edited.entries["kept"].title == "Edited" and parsed  # an edit is read again


def test_a_damaged_directory_file_is_loaded_again(tmp_path, monkeypatch):
    monkeypatch.setenv(cache_files.CACHE_DIR_ENV, str(tmp_path / "cache"))
    user = tmp_path / "kb"
    write_entry(user, entry_data("kept"))
    load_kb([user], strict=True)
    for part in (tmp_path / "cache").glob("entries-*.part"):
        part.write_bytes(b'{"entries": [["x.yaml", {"id": 3}, []]], "errors": []}')
    kb, _ = load_kb([user], strict=True)
    assert list(kb.entries) == ["kept"]


def test_runs_that_miss_the_same_part_together_build_it_once(tmp_path, monkeypatch):
    import multiprocessing
    import time

    monkeypatch.setenv(cache_files.CACHE_DIR_ENV, str(tmp_path / "cache"))
    builds = tmp_path / "builds"

    def build() -> bytes:
        with builds.open("a") as log:
            log.write(f"{os.getpid()}\n")
        time.sleep(0.5)  # long enough for the other run to miss the part and wait
        return b"built"

    def run(results) -> None:
        results.put(cache_files.by_content("test", b"one material", build, bytes.decode))

    context = multiprocessing.get_context("fork")
    results = context.Queue()
    runs = [context.Process(target=run, args=(results,)) for _ in range(2)]
    for process in runs:
        process.start()
    for process in runs:
        process.join(timeout=30)
    assert [results.get(timeout=5) for _ in runs] == ["built", "built"]
    assert len(builds.read_text().splitlines()) == 1
    assert not list((tmp_path / "cache").glob("*.lock"))


def test_validating_a_new_entry_compiles_only_its_own_patterns(tmp_path, monkeypatch):
    from triage.kbtools.samples import Baselines
    from triage.kbtools.validate import run_validators

    monkeypatch.setenv(cache_files.CACHE_DIR_ENV, str(tmp_path / "cache"))
    base, mine = tmp_path / "base", tmp_path / "mine"
    for name in ("alpha", "beta"):
        write_entry(base, entry_data(name))
    write_entry(mine, entry_data("aardvark", category="other"))  # sorts before the others
    load_engine_kb([str(base)], include_shipped=False)
    compiled = _compiled_patterns(monkeypatch)
    report = run_validators([mine], [base], Baselines())
    assert report.entries == 1
    assert any("AARDVARK" in pattern for pattern in compiled)
    assert not any("ALPHA" in pattern or "BETA" in pattern for pattern in compiled)


def test_an_entry_overridden_by_id_keeps_its_place_switched_off(tmp_path, monkeypatch):
    monkeypatch.setenv(cache_files.CACHE_DIR_ENV, str(tmp_path / "cache"))
    base, mine = tmp_path / "base", tmp_path / "mine"
    for name in ("alpha", "beta", "gamma"):
        write_entry(base, entry_data(name))
    marker = "ZQX-BETA-TWO synthetic failure"
    override = entry_data("beta", category="other", signatures=[{"text": marker, "weight": 3}])
    write_entry(mine, override | {"examples": {"match": [f"RuntimeError: {marker}"], "no_match": ["ok"]}})
    load_engine_kb([str(base)], include_shipped=False)
    compiled = _compiled_patterns(monkeypatch)
    kb, _ = load_engine_kb([str(base), str(mine)], include_shipped=False)
    # The base directory's databases serve as they are: only the override's patterns are compiled.
    assert compiled and all("TWO" in pattern for pattern in compiled)
    assert [(e.id, e.layer, e.overridden) for e in kb.entries] == [
        ("alpha", 0, False),
        ("beta", 0, True),
        ("gamma", 0, False),
        ("beta", 1, False),
    ]
    scanner = Scanner(kb)
    scanner.feed_text(
        "RuntimeError: ZQX-BETA synthetic failure\nRuntimeError: ZQX-BETA-TWO synthetic failure\n"
        "RuntimeError: ZQX-GAMMA synthetic failure\n"
    )
    found = {(d.id, d.category) for d in scanner.result().diagnoses}
    assert found == {("beta", "other"), ("gamma", "segfault")}  # the old beta's line fires nothing


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="the XDG layout is the Linux / BSD one")
def test_the_cache_lives_where_the_platform_keeps_user_caches(tmp_path, monkeypatch):
    monkeypatch.delenv(cache_files.CACHE_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_files.cache_dir() == tmp_path / "xdg" / "ascend-triage"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # not absolute: ignored, as the XDG spec says
    assert cache_files.cache_dir() == Path.home() / ".cache" / "ascend-triage"
    monkeypatch.setenv(cache_files.CACHE_DIR_ENV, str(tmp_path / "mine"))
    assert cache_files.cache_dir() == tmp_path / "mine"
