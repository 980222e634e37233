"""Removing a run's resources when no thread can start any more (interpreter exit)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.cluster import resources


class Removable:
    def __init__(self) -> None:
        self.removed = False

    def remove(self, **_: Any) -> None:
        self.removed = True


class Listing:
    def __init__(self, items: list[Removable]) -> None:
        self.items = items

    def list(self, **_: Any) -> list[Removable]:
        return self.items


class Engine:
    def __init__(self) -> None:
        self.containers = Listing([Removable(), Removable()])
        self.networks = Listing([Removable()])
        self.volumes = Listing([Removable()])


class ShutDownPool:
    """What concurrent.futures gives once the interpreter is shutting down."""

    def __init__(self, **_: Any) -> None:
        pass

    def __enter__(self) -> ShutDownPool:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def map(self, *_: object) -> Any:
        raise RuntimeError("cannot schedule new futures after interpreter shutdown")


def test_a_run_is_removed_one_container_at_a_time_when_no_thread_can_start(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resources, "ThreadPoolExecutor", ShutDownPool)
    engine = Engine()
    assert resources.remove_run(engine, "r") == 4
    assert all(c.removed for c in engine.containers.items)
