"""The store's commits run in a log writer process of its own. A write returns once that process
committed it; a failed commit is undone in the store and reported with SQLite's message; a
writer that dies leaves a store that refuses every write (whether its last commit landed is
unknown) and a file that reopens with every acknowledged write; the writer ends with the store,
whether the store is closed or its process killed; one store at a time writes a file, and a
store opened after a kill waits for the dead store's writer to finish."""

from __future__ import annotations

import fcntl
import gc
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from storekit import configmap, small_registry

from kubehpc.store import sqlite as log_module
from kubehpc.store.sqlite import SqliteLog
from kubehpc.store.store import Store

HERE = Path(__file__).resolve().parent


def _names_on_disk(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {row[0] for row in db.execute("SELECT name FROM events WHERE resource = 'configmaps'")}


def _log(store: Store) -> SqliteLog:
    log = store._log
    assert log is not None
    return log


def _gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # a zombie of ours still answers kill(pid, 0): reap it if it is our child
        try:
            if os.waitpid(pid, os.WNOHANG) != (0, 0):
                return True
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


def test_commits_are_made_by_a_process_other_than_the_stores(db_path: Path) -> None:
    with Store(small_registry(), db_path) as store:
        assert _log(store).writer_pid != os.getpid()


def test_a_write_is_in_the_file_when_it_returns(db_path: Path) -> None:
    with Store(small_registry(), db_path) as store:
        store.create(configmap("a"))
        assert _names_on_disk(db_path) == {"a"}  # read by a connection of its own


def test_a_failed_commit_reports_sqlites_message_and_leaves_the_store_as_it_was(db_path: Path) -> None:
    with Store(small_registry(), db_path) as store:
        store.create(configmap("a"))
        _log(store).refuse_writes()
        with pytest.raises(sqlite3.OperationalError, match="readonly database"):
            store.create(configmap("b"))
        assert [cm["metadata"]["name"] for cm in store.list("v1", "ConfigMap").items] == ["a"]
        _log(store).refuse_writes(False)
        store.create(configmap("c"))  # the writer goes on after a failed commit
    assert _names_on_disk(db_path) == {"a", "c"}


def test_a_store_whose_writer_died_refuses_every_write_and_says_why(db_path: Path) -> None:
    with Store(small_registry(), db_path) as store:
        store.create(configmap("a"))
        os.kill(_log(store).writer_pid, signal.SIGKILL)
        assert _gone(_log(store).writer_pid)
        for name in ("b", "c"):
            with pytest.raises(sqlite3.OperationalError, match="log writer is gone"):
                store.create(configmap(name))
        assert [cm["metadata"]["name"] for cm in store.list("v1", "ConfigMap").items] == ["a"]
    with Store(small_registry(), db_path) as reopened:
        assert [cm["metadata"]["name"] for cm in reopened.list("v1", "ConfigMap").items] == ["a"]


def test_closing_the_store_ends_its_writer(db_path: Path) -> None:
    store = Store(small_registry(), db_path)
    pid = _log(store).writer_pid
    store.close()
    assert _gone(pid)


STORE_THEN_WAIT = r"""
import sys, time
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from storekit import configmap, small_registry
from kubehpc.store.store import Store

store = Store(small_registry(), Path(sys.argv[1]))
store.create(configmap("a"))
print(store._log.writer_pid, flush=True)
time.sleep(600)
"""


def test_killing_the_stores_process_ends_its_writer(db_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", STORE_THEN_WAIT, str(db_path), str(HERE)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    writer_pid = int(proc.stdout.readline())
    proc.kill()
    proc.wait()
    # the writer is the dead process's child, reparented: it must see its requests close and exit
    assert _gone(writer_pid)
    assert _names_on_disk(db_path) == {"a"}


def test_a_second_store_on_a_file_in_use_is_refused_naming_the_file(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log_module, "LOCK_WAIT_S", 0.2)
    with (
        Store(small_registry(), db_path),
        pytest.raises(sqlite3.OperationalError, match=r"store\.db is in use by another store"),
    ):
        Store(small_registry(), db_path)


def test_a_store_waits_for_the_writer_before_it_to_let_go_of_the_file(db_path: Path) -> None:
    """As after a kill: the dead store's writer may still be finishing its last commit."""
    Store(small_registry(), db_path).close()
    held = os.open(db_path.with_name("store.db.lock"), os.O_RDWR)
    fcntl.flock(held, fcntl.LOCK_EX)  # the previous writer, still at work
    threading.Timer(0.5, os.close, (held,)).start()
    started = time.monotonic()
    with Store(small_registry(), db_path) as store:
        assert time.monotonic() - started >= 0.4
        store.create(configmap("a"))


def test_a_log_dropped_without_closing_ends_its_writer_and_lets_go_of_the_file(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A SqliteLog rather than a Store: the suite holds every Store until the test ends.
    monkeypatch.setattr(log_module, "LOCK_WAIT_S", 2.0)
    log = SqliteLog(db_path)
    pid = log.writer_pid
    del log
    gc.collect()
    assert _gone(pid)
    with Store(small_registry(), db_path) as store:  # the lock was let go
        store.create(configmap("a"))
