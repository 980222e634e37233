"""The znode dump of a failed test's diagnostics finishes when ZooKeeper answers nothing.

A whole-ensemble power loss once left a test's diagnostics waiting forever on kazoo's
plain calls (they wait for a connection without end); every read now has a deadline."""

from __future__ import annotations

import threading
import time
from typing import Any

from harness.cluster.metadata.zookeeper import dump_znodes


class WouldHang(BaseException):
    """What a plain kazoo call on an ensemble without quorum does: never return."""


class _Pending:
    def __init__(self, value: Any = None, answers: bool = True) -> None:
        self.value, self.answers = value, answers

    def get(self, timeout: float | None = None) -> Any:
        if self.answers:
            return self.value
        if timeout is None:
            raise WouldHang("an untimed wait on a ZooKeeper that never answers")
        threading.Event().wait(timeout)
        raise TimeoutError(f"no answer in {timeout} s")


class _SilentZooKeeper:
    """Connected once, answering nothing now."""

    def exists(self, path: str) -> Any:
        raise WouldHang(path)

    get_children = get = exists

    def exists_async(self, path: str) -> _Pending:
        return _Pending(answers=False)

    get_children_async = get_async = exists_async


class _ZooKeeper:
    def __init__(self, tree: dict[str, bytes]) -> None:
        self.tree = tree

    def exists_async(self, path: str) -> _Pending:
        return _Pending(object() if path in self.tree else None)

    def get_children_async(self, path: str) -> _Pending:
        prefix = path.rstrip("/") + "/"
        return _Pending(sorted({p[len(prefix):].split("/")[0] for p in self.tree if p.startswith(prefix)}))

    def get_async(self, path: str) -> _Pending:
        return _Pending((self.tree[path], None))




def test_a_silent_ensemble_ends_the_dump_within_its_budget_and_says_what_was_not_read() -> None:
    start = time.monotonic()
    dump = dump_znodes(_SilentZooKeeper(), budget_s=1.0)
    assert time.monotonic() - start < 3.0
    assert dump["znodes"] == {}
    assert "/controller" in dump["errors"]


def test_an_answering_ensemble_is_dumped_whole() -> None:
    tree = {"/controller": b'{"brokerid": 1}', "/brokers/ids": b"", "/brokers/ids/0": b'{"port": 1}'}
    dump = dump_znodes(_ZooKeeper(tree))
    assert dump["znodes"] == {"/controller": {"brokerid": 1}, "/brokers/ids": None,
                              "/brokers/ids/0": {"port": 1}}
