"""One DuckDB instance per warehouse file and mode, kept by the process; the file is attached only while in use.

DuckDB lets one process hold a database file, and PERAS opens the file only for the moment it reads or writes
(peras/warehouse.py), a dozen to twenty times in one command. Each opening used to create an in-memory DuckDB
instance (~9 ms: its catalog of built-in functions, its buffer manager, its threads) only to attach the file and
destroy the instance again when the last connection closed. Now the instance stays, without the file:

- `acquire` attaches the file to its instance (if no connection of this process has it attached already) and
  returns a new connection (a cursor of the instance) that uses it;
- `release`, after the last such connection closed, detaches the file: DuckDB checkpoints it and lets go of its
  lock, exactly as destroying the instance did, so another process can open it at once;
- an instance taken up again gets back the settings it was made with (a write's memory cap, sql/warehouse/
  set_memory_tight.sql, must not outlive its connections); one whose settings cannot be reset (`lock_down`
  locked them) is closed and made again.

At most IDLE_INSTANCES instances are kept without a file (the tests open hundreds of warehouses); a forked child
never touches its parent's instances (DuckDB's threads do not survive a fork).
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

Config = dict[str, str | bool | int | float | list[str]]  # what duckdb.connect takes as config
IDLE_INSTANCES = 4  # instances kept with no file attached, the least recently used closed first
log = logging.getLogger(__name__)


@dataclass(eq=False)
class _Instance:
    """A DuckDB instance for one file and mode: the connection that holds it, who uses the file now."""

    holder: duckdb.DuckDBPyConnection
    config: Config
    defaults: dict[str, str]
    users: int = 0
    attached: bool = False
    alias: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)


_INSTANCES: OrderedDict[tuple[Path, bool], _Instance] = OrderedDict()
_LOCK = threading.Lock()
_LEFT_BY_PARENT: list[object] = []  # a forked child's inherited instances: never closed there, never used


def acquire(path: Path, read_only: bool, config: Config, attach: str, alias: str) -> duckdb.DuckDBPyConnection:
    """A connection to `path` that uses it as `alias`, the file attached by `attach` unless it is already (an
    instance made with `config`, as `duckdb.connect` takes it).

    Raises what attaching raises (the file locked by another process, not a DuckDB file); nothing is held then.
    """
    key = (path.resolve(), read_only)
    with _LOCK:
        instance = _INSTANCES.get(key)
        if instance is None:
            instance = _new_instance(config)
            _INSTANCES[key] = instance
        _INSTANCES.move_to_end(key)
        instance.users += 1  # reserved before attaching: a release meanwhile does not detach it
    try:
        with instance.lock:
            if not instance.attached:
                _restore_settings(instance)
                instance.holder.execute(attach)
                instance.attached, instance.alias = True, alias
            con = instance.holder.cursor()
        con.execute(f"use {alias}")
        return con
    except BaseException:
        release(path, read_only)
        raise


def release(path: Path, read_only: bool) -> None:
    """One connection of `acquire` closed: the last one's release detaches the file (checkpointed, lock let go)."""
    key = (path.resolve(), read_only)
    with _LOCK:
        instance = _INSTANCES.get(key)
        if instance is None:
            return
        instance.users -= 1
        if instance.users:
            return
    with instance.lock:
        if instance.users or not instance.attached:
            return
        try:
            instance.holder.execute(f"detach {instance.alias}")
            instance.attached = False
        except duckdb.Error as exc:  # closing the instance detaches too (DuckDB's last try at the checkpoint)
            log.warning("detaching the warehouse %s failed (%s); closing its DuckDB instance", key[0], exc)
            _discard(key, instance)
            return
    _trim_idle()


def _new_instance(config: Config) -> _Instance:
    # No progress bar: DuckDB draws one on stdout for any statement over 2 s, into a command's output.
    holder = duckdb.connect(":memory:", config=config)
    holder.execute("set enable_progress_bar = false")
    return _Instance(holder, config, _settings(holder))


def _settings(holder: duckdb.DuckDBPyConnection) -> dict[str, str]:
    return {name: value for name, value in holder.execute("select name, value from duckdb_settings()").fetchall()}


def _restore_settings(instance: _Instance) -> None:
    """Reset what a connection set on the instance since it was made (DuckDB settings are the instance's)."""
    changed = [name for name, value in _settings(instance.holder).items() if instance.defaults.get(name) != value]
    if not changed:
        return
    try:
        for name in changed:
            instance.holder.execute(f"reset {name}")  # a name DuckDB gave, not an input
        if _settings(instance.holder) == instance.defaults:
            return
    except duckdb.Error:
        pass  # locked (lock_down) or not resettable: a new instance has the defaults
    fresh = _new_instance(instance.config)
    _close(instance.holder)
    instance.holder, instance.defaults = fresh.holder, fresh.defaults


def _trim_idle() -> None:
    with _LOCK:
        idle = [key for key, instance in _INSTANCES.items() if not instance.users and not instance.attached]
        for key in idle[: max(0, len(idle) - IDLE_INSTANCES)]:
            _close(_INSTANCES.pop(key).holder)


def _discard(key: tuple[Path, bool], instance: _Instance) -> None:
    with _LOCK:
        if _INSTANCES.get(key) is instance:
            del _INSTANCES[key]
    _close(instance.holder)


def _close(holder: duckdb.DuckDBPyConnection) -> None:
    try:
        holder.close()
    except duckdb.Error as exc:
        log.warning("closing a DuckDB instance failed: %s", exc)


def _forget_after_fork() -> None:
    """In a forked child: the parent's instances stay referenced (closing them there could hang) and unused."""
    global _LOCK
    _LEFT_BY_PARENT.extend(_INSTANCES.values())
    _INSTANCES.clear()
    _LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)
