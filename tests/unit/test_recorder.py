"""The history recorder never hangs a run: a lock that does not come free is an error
naming the thread that holds it and where that thread is."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, cast

import pytest

from harness import history as hist
from harness.workload.driver import RecorderStuck, _Recorder


class _BlockingWriter:
    """Appends block until released: a writer stuck under the recorder's lock."""

    def __init__(self) -> None:
        self.inside = threading.Event()
        self.release = threading.Event()
        self.rows: list[tuple[str, Mapping[str, Any]]] = []

    def append(self, table: str, row: Mapping[str, Any]) -> None:
        if table == "polls":
            self.inside.set()
            self.release.wait(10)
        self.rows.append((table, row))


def _recorder(writer: _BlockingWriter, wait_s: float) -> _Recorder:
    return _Recorder(cast(hist.HistoryWriter, writer), lock_wait_s=wait_s)


def test_a_lock_that_never_comes_free_is_an_error_naming_its_holder() -> None:
    writer = _BlockingWriter()
    recorder = _recorder(writer, wait_s=0.3)
    holder = threading.Thread(target=recorder.row, args=("polls", {"offset": 1}), name="consumer-cb")
    holder.start()
    try:
        assert writer.inside.wait(5)
        with pytest.raises(RecorderStuck) as stuck:
            recorder.row("sends", {"message_id": "pa-1"})
        text = str(stuck.value)
        assert "thread MainThread waited 0.3 s to record a sends row" in text
        assert "thread consumer-cb holds it, recording a polls row" in text
        assert "in append" in text  # the holder's stack, where it is stuck
    finally:
        writer.release.set()
        holder.join(5)
    recorder.row("sends", {"message_id": "pa-2"})  # free again: recording goes on
    assert [t for t, _ in writer.rows] == ["polls", "sends"]


def test_rows_are_recorded_in_order_when_nothing_is_stuck() -> None:
    writer = _BlockingWriter()
    recorder = _recorder(writer, wait_s=0.3)
    for i in range(3):
        recorder.row("sends", {"seq": i})
    assert [r["seq"] for _, r in writer.rows] == [0, 1, 2]
