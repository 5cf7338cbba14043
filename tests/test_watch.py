"""The watcher on real files with a real observer: every kind of edit reaches the index."""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path

import pytest

from memex.config import Config
from memex.index import scan
from memex.records import Record
from memex.watch import watcher as watch_mod
from memex.watch.state import status
from memex.watch.watcher import Watcher, settings_for
from memex.errors import ConfigError, WatcherRunning
from memex.vault import Vault
from tests.fakes import HashEmbedder
from tests.watchkit import TIMEOUT, body_at, found, index_matches_disk, running_watcher, wait_for

MEM = "memories"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_created_modified_deleted_files_reach_the_index(vault: Vault) -> None:
    root = vault.root
    with running_watcher(root):
        note = root / MEM / "notes" / "deploy.md"
        _write(note, "The deploy target is aardvark-eu\n")
        wait_for(lambda: found(vault, "aardvark") == ["memories/notes/deploy.md"], what="created file")
        _write(note, "The deploy target is bonobo-us\n")  # in place
        wait_for(lambda: found(vault, "bonobo"), what="modified file")
        assert found(vault, "aardvark") == []
        note.unlink()
        wait_for(lambda: body_at(vault, "memories/notes/deploy.md") is None, what="deleted file")
        assert found(vault, "bonobo") == []
        assert index_matches_disk(vault)


def test_rename_keeps_the_memory_and_its_usage(vault: Vault) -> None:
    result = vault.add("Prefer capybara-style naming for fixtures")
    vault.record_access([result.id])
    src = vault.root / result.path
    with running_watcher(vault.root):
        dest = src.with_name("renamed.md")
        os.rename(src, dest)
        wait_for(lambda: body_at(vault, "memories/user/renamed.md") is not None, what="renamed file")
        assert body_at(vault, result.path) is None
        memory = vault.get(result.id)  # same id, new path, usage kept
        assert memory.path == "memories/user/renamed.md"
        assert memory.access_count == 1  # the recall counted before the rename
        assert index_matches_disk(vault)


def test_whole_folders_moved_deleted_and_dropped_in(vault: Vault, tmp_path: Path) -> None:
    root = vault.root
    for i in range(5):
        _write(root / MEM / "team" / f"n{i}.md", f"team note {i} about ocelot{i}\n")
    vault.reindex()
    with running_watcher(root):
        os.rename(root / MEM / "team", root / MEM / "squad")
        wait_for(lambda: found(vault, "ocelot3") == ["memories/squad/n3.md"], what="moved folder")
        wait_for(lambda: index_matches_disk(vault), what="index to match after folder move")

        outside = tmp_path / "outside"
        for i in range(4):
            _write(outside / "deep" / f"o{i}.md", f"dropped note pangolin{i}\n")
        shutil.move(str(outside), str(root / MEM / "dropped"))
        wait_for(lambda: all(found(vault, f"pangolin{i}") for i in range(4)), what="folder moved in")

        shutil.move(str(root / MEM / "squad"), str(tmp_path / "gone"))  # moved out of the vault
        wait_for(lambda: not found(vault, "ocelot3"), what="folder moved out")

        shutil.rmtree(root / MEM / "dropped")
        wait_for(lambda: not any(found(vault, f"pangolin{i}") for i in range(4)), what="folder deleted")
        wait_for(lambda: index_matches_disk(vault), what="index to match at the end")
        assert vault.backend.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 0


def test_truncate_then_write_never_loses_the_memory(vault: Vault) -> None:
    result = vault.add("The staging database is quokka-db on port 5433")
    path = vault.root / result.path
    original = path.read_bytes()
    # A long grace: the test, not a slow machine, decides when the content arrives.
    with running_watcher(vault.root, empty_grace_ms=10_000) as watcher:
        with open(path, "r+b") as handle:
            handle.truncate(0)
            handle.flush()
            os.fsync(handle.fileno())
            # The watcher must have seen the empty file (not just been too slow to).
            wait_for(lambda: result.path in watcher.indexing.empty_since, what="the watcher to see the empty file")
            for _ in range(10):  # and for a while after, the old memory is still there
                assert found(vault, "quokka") == [result.path], "old content must stay searchable"
                time.sleep(0.03)
            assert watcher.totals["removed"] == 0
            handle.write(original.replace(b"quokka-db", b"wombat-db"))
        wait_for(lambda: found(vault, "wombat"), what="the real content")
        assert found(vault, "quokka") == []
        assert vault.get(result.id).body.strip().endswith("wombat-db on port 5433")
        assert watcher.totals["removed"] == 0
        assert vault.backend.conn.execute("SELECT count(*) FROM index_errors").fetchone()[0] == 0
        assert index_matches_disk(vault)


def test_a_file_left_empty_is_indexed_as_a_rebuild_would(vault: Vault) -> None:
    result = vault.add("A memory its author emptied for good: platypus")
    path = vault.root / result.path
    with running_watcher(vault.root, empty_grace_ms=300) as watcher:
        path.write_bytes(b"")
        wait_for(lambda: not found(vault, "platypus"), what="the grace to end")
        # The watcher counts a batch after its commit, which a search sees first:
        # on a loaded machine (CI) the count could be read in between.
        wait_for(lambda: watcher.totals["removed"] >= 1, what="the removal to be counted")
        assert watcher.totals["removed"] == 1
        reason = vault.backend.conn.execute("SELECT reason FROM index_errors WHERE path = ?", (result.path,)).fetchone()
        assert reason is not None and "empty" in reason[0]
        assert vault.reindex().removed == 0  # the index already agrees with the files


def _vim_save(path: Path, text: str) -> None:
    """vim with backupcopy=no: rename the original away, write anew, drop the backup."""
    backup = path.with_name(path.name + "~")
    os.rename(path, backup)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.unlink(backup)


def _ide_save(path: Path, text: str, tmp_name: str) -> None:
    """IDE / gedit style: write a hidden temp file next to it, rename it over."""
    tmp = path.with_name(tmp_name)
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


@pytest.mark.parametrize("style", ["vim", "ide", "gedit"])
def test_atomic_saves_update_in_place(vault: Vault, style: str) -> None:
    result = vault.add("Release branches are cut on tuesday")
    vault.record_access([result.id])
    path = vault.root / result.path
    with running_watcher(vault.root) as watcher:
        text = path.read_text().replace("tuesday", "thursday")
        if style == "vim":
            _vim_save(path, text)
        elif style == "ide":
            _ide_save(path, text, f".{path.name}.tmp.1234")
        else:
            _ide_save(path, text, ".goutputstream-AB12CD")
        wait_for(lambda: found(vault, "thursday") == [result.path], what=f"{style} save")
        assert watcher.wait_idle(10)
        assert found(vault, "tuesday") == []
        assert watcher.totals["removed"] == 0 and watcher.totals["added"] == 0
        assert vault.get(result.id).access_count == 1  # usage survived the save
        assert index_matches_disk(vault)


def test_temp_swap_backup_and_hidden_files_are_never_indexed(vault: Vault) -> None:
    root = vault.root
    with running_watcher(root) as watcher:
        for rel in (
            f"{MEM}/.note.md.swp", f"{MEM}/note.md~", f"{MEM}/#note.md#", f"{MEM}/.hidden.md",
            f"{MEM}/4913", f"{MEM}/note.md.tmp", f"{MEM}/.trash/old.md", ".memex/stray.md",
            ".git/stray.md", "sessions/s1/turn.txt",
        ):
            _write(root / rel, "secret narwhal text\n")
        _write(root / MEM / "sentinel.md", "sentinel marmot\n")
        wait_for(lambda: found(vault, "marmot"), what="the sentinel")
        assert watcher.wait_idle(10)
        paths = [r[0] for r in vault.backend.conn.execute("SELECT path FROM memories")]
        assert paths == ["memories/sentinel.md"]
        assert found(vault, "narwhal") == []


def test_a_memory_added_through_memex_is_not_indexed_again(vault_root: Path) -> None:
    watcher_model = HashEmbedder()
    with Vault(vault_root, embedder=HashEmbedder()) as writer, running_watcher(vault_root, watcher_model) as w:
        before = w.events
        result = writer.add("Write-through means the watcher sees nothing new: lemur")
        wait_for(lambda: w.events > before, what="the watcher to get the add's events")
        assert w.wait_idle(10)
        assert w.totals["unchanged"] >= 1
        assert (w.totals["added"], w.totals["updated"], w.totals["moved"]) == (0, 0, 0)
        assert watcher_model.texts_embedded == 0  # the watcher embedded nothing
        assert found(writer, "lemur") == [result.path]


def test_start_up_reconcile_picks_up_edits_made_while_not_watching(vault: Vault) -> None:
    kept = vault.add("kept memory about herons")
    edited = vault.add("edited memory about ibis")
    gone = vault.add("deleted memory about egrets")
    (vault.root / edited.path).write_text((vault.root / edited.path).read_text().replace("ibis", "storks"))
    (vault.root / gone.path).unlink()
    _write(vault.root / MEM / "new.md", "a new memory about cranes\n")
    with running_watcher(vault.root):
        # start() reconciles before it returns: no waiting needed.
        assert index_matches_disk(vault)
        assert found(vault, "storks") == [edited.path]
        assert found(vault, "egrets") == [] and found(vault, "cranes") == ["memories/new.md"]
        assert found(vault, "herons") == [kept.path]


def test_periodic_reconcile_repairs_lost_events(vault: Vault) -> None:
    with running_watcher(vault.root, reconcile_seconds=0.5) as watcher:
        watcher._observer.unschedule_all()  # the watches are lost, as after an inotify limit
        _write(vault.root / MEM / "unseen.md", "written while no event could arrive: tapir\n")
        wait_for(lambda: found(vault, "tapir"), what="the periodic reconcile")
        # The reconcile's commit is visible a moment before it counts itself.
        wait_for(lambda: watcher.reconciles >= 2, timeout=2, what="the reconcile to be counted")


def test_an_inotify_overflow_triggers_a_reconcile_at_once(vault: Vault) -> None:
    with running_watcher(vault.root) as watcher:  # periodic reconcile: an hour away
        watcher._observer.unschedule_all()
        _write(vault.root / MEM / "dropped.md", "an event the kernel dropped: okapi\n")
        logging.getLogger("watchdog.observers.inotify").warning(
            "Inotify queue overflowed; reconciling recursive watches below %r", str(vault.root))
        wait_for(lambda: found(vault, "okapi"), what="the overflow reconcile")


def test_a_crash_on_one_file_is_logged_with_its_path_and_the_watcher_goes_on(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real_read = scan.read_record

    def flaky_read(root: Path, rel: str, config: Config, real_dirs: dict[str, str]) -> Record:
        if "boom" in rel:
            raise RuntimeError("simulated parser crash")
        return real_read(root, rel, config, real_dirs)

    monkeypatch.setattr(scan, "read_record", flaky_read)
    caplog.set_level(logging.ERROR, logger="memex.watch.watcher")
    with running_watcher(vault.root) as watcher:
        _write(vault.root / MEM / "boom.md", "this one crashes\n")
        _write(vault.root / MEM / "fine.md", "this one is fine: gecko\n")
        wait_for(lambda: found(vault, "gecko"), what="the good file of the same burst")
        wait_for(lambda: watcher.totals["failures"] >= 1, what="the failure to be counted")
        assert any("memories/boom.md" in r.getMessage() for r in caplog.records)
        assert watcher.last_error is not None and watcher.last_error["path"] == "memories/boom.md"
        _write(vault.root / MEM / "later.md", "still watching: iguana\n")
        wait_for(lambda: found(vault, "iguana"), what="a later file")


def test_a_burst_is_coalesced_into_few_batches(vault: Vault) -> None:
    with running_watcher(vault.root) as watcher:
        for i in range(60):
            _write(vault.root / MEM / "burst" / f"b{i:02d}.md", f"burst note {i} mongoose{i}\n")
        wait_for(lambda: vault.backend.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 60,
                 what="all 60 files")
        assert watcher.wait_idle(10)
        assert watcher.batches < 20  # one per file would be 60
        assert watcher.totals["added"] == 60 and watcher.totals["updated"] == 0
        assert index_matches_disk(vault)


def test_watch_settings_come_from_the_vault_config(vault_root: Path) -> None:
    config = vault_root / ".memex" / "config.toml"
    text = config.read_text()
    with Vault(vault_root, embedder=None) as v:
        assert Watcher(v).settings.reconcile_seconds == 60.0  # the documented default
    config.write_text(text.replace("# reconcile_seconds = 60", "reconcile_seconds = 5")
                      .replace("# debounce_ms = 40", "debounce_ms = 25"))
    with Vault(vault_root, embedder=None) as v:
        settings = Watcher(v, settings_for(v, debounce_ms=10)).settings
        assert (settings.reconcile_seconds, settings.debounce_ms) == (5.0, 10)
    config.write_text(text.replace("# reconcile_seconds = 60", 'reconcile_seconds = "soon"'))
    with Vault(vault_root, embedder=None) as v, pytest.raises(ConfigError, match="config.toml.*reconcile_seconds"):
        Watcher(v)
    config.write_text(text.replace("# debounce_ms = 40", "debounce_ms = 0"))
    with Vault(vault_root, embedder=None) as v, pytest.raises(ConfigError, match="debounce_ms must be positive"):
        Watcher(v)


def test_a_second_watcher_on_the_same_vault_is_refused(vault: Vault) -> None:
    with running_watcher(vault.root):
        other = Vault(vault.root, embedder=None)
        with pytest.raises(WatcherRunning, match="already running.*pid"):
            Watcher(other).start()
        other.close()
    with Vault(vault.root, embedder=None) as again:  # and allowed once the first stopped
        w = Watcher(again)
        w.start()
        assert status(again)["watcher"]["running"] is True
        w.close()
        assert status(again)["watcher"]["running"] is False


def test_a_dead_observer_is_restarted_and_what_it_missed_reconciled(vault: Vault) -> None:
    with running_watcher(vault.root) as watcher:  # heartbeat every 0.2 s checks the observer
        dead = watcher._observer
        dead.stop()
        dead.join(5)
        _write(vault.root / MEM / "missed.md", "written while nothing listened: dingo\n")
        wait_for(lambda: found(vault, "dingo"), what="the restart and its reconcile")
        assert watcher._observer is not dead and watcher._observer.is_alive()
        assert watcher.last_error is not None and "observer" in watcher.last_error["error"]
        _write(vault.root / MEM / "after.md", "the new observer hears this: kiwi\n")
        wait_for(lambda: found(vault, "kiwi"), what="an event to the new observer")


def test_without_inotify_watches_it_falls_back_to_polling(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    class NoWatchesLeft(watch_mod.Observer):  # type: ignore[misc,valid-type]
        def start(self) -> None:
            raise OSError(28, "inotify watch limit reached")

    monkeypatch.setattr(watch_mod, "Observer", NoWatchesLeft)
    caplog.set_level(logging.WARNING, logger="memex.watch.watcher")
    with running_watcher(vault.root) as watcher:
        assert isinstance(watcher._observer, watch_mod.PollingObserver)
        assert any("polling" in r.getMessage() for r in caplog.records)
        _write(vault.root / MEM / "polled.md", "seen by polling: wombat\n")
        wait_for(lambda: found(vault, "wombat"), what="the polling observer")


def test_a_file_deleted_while_watching_leaves_no_text_in_the_index_bytes(vault: Vault) -> None:
    """The watcher scrubs after a removal, as erase and reindex do: the deleted
    words must not linger in FTS segments or the WAL until the next reconcile."""
    from tests.erasekit import files_with_text

    root = vault.root
    keep = vault.add("The build server is called quetzalcoatl")
    doomed = vault.add("The staging password hint is xylophonist")
    with running_watcher(root):
        assert files_with_text(root, ["xylophonist"]), "positive control: the word is in the index first"
        (root / doomed.path).unlink()
        wait_for(lambda: body_at(vault, doomed.path) is None, what="deleted file purged")
        wait_for(lambda: not files_with_text(root, ["xylophonist"]), what="deleted text scrubbed from the bytes")
    assert found(vault, "quetzalcoatl") == [keep.path]


def test_an_index_deleted_while_watching_is_rebuilt_and_kept_in_step(vault: Vault) -> None:
    """Found from outside: `rm .memex/index.db*` (the docs: delete it any time)
    while `memex watch` ran left the watcher writing into the deleted file for
    the rest of its life: every later edit was invisible to search, hooks and
    doctor, and no reconcile ever repaired it."""
    kept = vault.add("kept memory about herons")
    with running_watcher(vault.root) as watcher:  # heartbeat every 0.2 s
        for name in ("index.db", "index.db-wal", "index.db-shm"):
            (vault.memex_dir / name).unlink(missing_ok=True)
        vault.close()  # this test's own connection: the new file from now on
        wait_for(lambda: found(vault, "herons") == [kept.path], what="the index rebuilt from the files")
        _write(vault.root / MEM / "later.md", "written after the index was deleted: tapir\n")
        wait_for(lambda: found(vault, "tapir") == ["memories/later.md"], what="a later edit in the new index")
        assert watcher.wait_idle(TIMEOUT)
        assert index_matches_disk(vault)


def test_a_vault_folder_moved_while_watching_is_not_made_again_where_it_was(vault: Vault, tmp_path: Path) -> None:
    """The check for a deleted index.db must not take a moved vault for one: it
    made a new, empty index (a vault with no memories) at the old path."""
    vault.add("kept memory about ibexes")
    root = vault.root
    moved = tmp_path / "moved-vault"
    with running_watcher(root):
        os.rename(root, moved)
        time.sleep(1.0)  # several heartbeats (0.2 s): each would have made it again
        assert not (root / ".memex" / "index.db").exists()
    shutil.rmtree(root, ignore_errors=True)  # the stopped watcher's last state file
    os.rename(moved, root)  # back, for the fixtures' own teardown


def test_a_watcher_whose_vault_folder_went_stops_and_makes_nothing_where_it_was(vault: Vault, tmp_path: Path) -> None:
    """Found from outside: after `mv vault vault2` the watcher ran on, and its
    heartbeat made .memex/ (watch.json, write.lock) again at the old path, which
    then passed for a vault. It stops instead, saying why, and writes nothing there."""
    import threading

    root = vault.root
    moved = tmp_path / "moved-vault"
    watcher = Watcher(Vault(root, embedder=HashEmbedder()), settings_for(vault, heartbeat_seconds=0.1))
    watcher.start()
    thread = threading.Thread(target=watcher.run, kwargs={"install_signals": False}, daemon=True)
    thread.start()
    try:
        os.rename(root, moved)
        thread.join(TIMEOUT)
        assert not thread.is_alive(), "the watcher did not stop"
        assert watcher.gone and not root.exists()
        assert watcher.last_error is not None and "gone" in watcher.last_error["error"]
    finally:
        watcher.stop()
        thread.join(TIMEOUT)
        watcher.vault.close()
        if not root.exists():
            os.rename(moved, root)
