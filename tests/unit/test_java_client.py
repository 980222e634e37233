"""The Java client's workload threads against a stand-in container: rows recorded as lines
come, SIGTERM on stop, and every way of ending short named as the client's error."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from harness.workload.driver import ConsumerSpec, ProducerSpec
from harness.workload.group_member import GroupProgress
from harness.workload.java_client import JavaConsumer, JavaProducer


def event(name: str, **fields: Any) -> bytes:
    return (json.dumps({"name": name, "timestamp": 1_000.0, **fields}) + "\n").encode()


STARTED = event("startup_complete", config={"retries": "2147483647"})
DONE = event("shutdown_complete")


def acked(seq: int, partition: int = 0, offset: int | None = None) -> bytes:
    return event("producer_send_success", message_id=f"pa-{seq}", seq=seq, topic="t", partition=partition,
                 offset=seq if offset is None else offset, send_ts=900.0)


class FakeContainer:
    """Prints ``before`` at once and ``after`` once SIGTERM came (unless it ignores it),
    then exits with ``status``."""

    def __init__(self, before: Sequence[bytes], after: Sequence[bytes], status: int = 0,
                 ignores_sigterm: bool = False, stderr: bytes = b"") -> None:
        self.before, self.after, self.status = list(before), list(after), status
        self.ignores_sigterm, self.stderr = ignores_sigterm, stderr
        self.signals: list[str | None] = []
        self.removed = False
        self._terminated = threading.Event()

    def logs(self, *, stream: bool = False, follow: bool = False, stdout: bool = True, stderr: bool = True,
             tail: int | None = None) -> Any:
        if not stream:
            return self.stderr
        return self._stream()

    def _stream(self) -> Iterator[bytes]:
        yield from self.before
        self._terminated.wait(10)
        yield from self.after

    def kill(self, signal: str | None = None) -> None:
        self.signals.append(signal)
        if signal is None or not self.ignores_sigterm:
            self._terminated.set()

    def wait(self, *, timeout: float | None = None) -> dict[str, int]:
        return {"StatusCode": self.status}

    def remove(self, *, force: bool = False) -> None:
        self.removed = True


class FakeContainers:
    def __init__(self, container: FakeContainer) -> None:
        self.container = container
        self.started: list[tuple[str | None, str, list[str]]] = []
        self.images: list[str | None] = []

    def java_image(self, version: str | None) -> str:
        self.images.append(version)
        return f"kafka-chaos/java-client:{version}"

    def start_java(self, version: str | None, name: str, arguments: Sequence[str]) -> FakeContainer:
        self.started.append((version, name, list(arguments)))
        return self.container


class Host:
    def __init__(self, container: FakeContainer) -> None:
        self.client_containers = FakeContainers(container)

    def bootstrap_servers(self, zone: str) -> str:
        return f"127.0.0.1:9{zone == 'a':d}00"


class Rows:
    def __init__(self) -> None:
        self.rows: list[tuple[str, Mapping[str, Any]]] = []

    def __call__(self, table: str, row: Mapping[str, Any]) -> None:
        self.rows.append((table, row))


def run_producer(container: FakeContainer, spec: ProducerSpec | None = None,
                 bound_s: float | None = None) -> tuple[JavaProducer, Rows, Host]:
    host, rows, stop = Host(container), Rows(), threading.Event()
    producer = JavaProducer(spec or ProducerSpec("pa", "a", client="java", partitions=(0, 2)), host, "t",
                            [0, 1, 2], rows, stop)
    if bound_s is not None:
        producer.bound_s = bound_s
    producer.start()
    stop.set()
    producer.join(30)
    assert not producer.is_alive()
    return producer, rows, host


def test_a_producer_is_started_with_its_zone_partitions_rate_and_java_settings() -> None:
    spec = ProducerSpec("pa", "a", client="java", client_version="4.0.0", partitions=(0, 2), rate_per_s=50,
                        settings={"message.timeout.ms": 20000, "enable.idempotence": True})
    _, _, host = run_producer(FakeContainer([STARTED], [DONE]), spec)
    [(version, name, args)] = host.client_containers.started
    assert (version, name) == ("4.0.0", "pa")
    assert host.client_containers.images == ["4.0.0"]  # built before the workload started
    assert args[:11] == ["producer", "--bootstrap", "127.0.0.1:9100", "--topic", "t", "--name", "pa",
                         "--partitions", "0,2", "--rate", "50.0"]
    settings = [args[i + 1] for i, a in enumerate(args) if a == "--set"]
    assert "delivery.timeout.ms=20000" in settings and "enable.idempotence=true" in settings
    assert "acks=all" in settings  # the harness's default, in the Java client's words


def test_a_producer_records_every_send_and_stops_on_sigterm_after_its_last_outcomes() -> None:
    container = FakeContainer([STARTED, acked(0), acked(1, 2)], [acked(2), DONE])
    producer, rows, _ = run_producer(container)
    assert producer.error is None
    assert container.signals == ["SIGTERM"]
    assert container.removed  # no client outlives its scenario
    assert [row["seq"] for table, row in rows.rows if table == "sends"] == [0, 1, 2]  # the last after SIGTERM
    assert producer.outcomes["acked"] == 3 and producer.last_acked == {0: 2, 2: 1}


def test_a_producer_that_exits_before_shutdown_complete_is_an_error_with_its_stderr() -> None:
    container = FakeContainer([STARTED, acked(0)], [], stderr=b"Exception in thread main: boom\n")
    producer, rows, _ = run_producer(container)
    assert producer.error is not None
    assert producer.error.startswith("the Java producer exited before it printed shutdown_complete")
    assert "boom" in producer.error
    assert len(rows.rows) == 1  # what it said before is kept


def test_an_exit_other_than_sigterms_is_an_error() -> None:
    producer, _, _ = run_producer(FakeContainer([STARTED], [DONE], status=3))
    assert producer.error is not None and "exited with status 3" in producer.error
    producer, _, _ = run_producer(FakeContainer([STARTED], [DONE], status=143))  # the JVM's exit on SIGTERM
    assert producer.error is None


def test_a_line_that_cannot_be_read_is_the_error_and_the_rows_before_it_stay() -> None:
    producer, rows, _ = run_producer(FakeContainer([STARTED, acked(0), b'{"name": "produ\n'], [DONE]))
    assert producer.error is not None and producer.error.startswith("ClientOutputError: producer pa, line 3")
    assert len(rows.rows) == 1


def test_a_driver_that_ignores_sigterm_is_killed_after_its_bound() -> None:
    container = FakeContainer([STARTED], [DONE], ignores_sigterm=True)
    producer, _, _ = run_producer(container, bound_s=0.5)
    assert container.signals == ["SIGTERM", None]
    assert producer.error is not None
    assert "did not stop within 0 s of SIGTERM and was killed" in producer.error


def test_the_producers_bound_follows_its_delivery_timeout() -> None:
    spec = ProducerSpec("pa", "a", client="java", settings={"message.timeout.ms": 60000})
    producer = JavaProducer(spec, Host(FakeContainer([], [])), "t", [0], Rows(), threading.Event())
    assert producer.bound_s == 60 + 30


def record(offset: int, partition: int = 0) -> bytes:
    return event("record_data", topic="t", partition=partition, offset=offset, value=f"pa-{offset}")


def test_a_group_member_records_reads_into_the_groups_progress_and_stops_once_caught_up() -> None:
    assigned = event("partitions_assigned", partitions=[{"topic": "t", "partition": 0}])
    container = FakeContainer([STARTED, assigned, record(0), record(1)], [DONE])
    host, rows, progress = Host(container), Rows(), GroupProgress()
    spec = ConsumerSpec("ca", "b", client="java", group="g", commit="sync")
    consumer = JavaConsumer(spec, host, "t", [0, 1], rows, progress)
    consumer.start()
    consumer.finish({0: 1}, timeout_s=20)
    consumer.join(30)
    assert consumer.error is None and consumer.caught_up()
    assert [t for t, _ in rows.rows] == ["rebalances", "polls", "polls"]
    [(_, _, args)] = host.client_containers.started
    assert args[args.index("--group") + 1] == "g" and args[args.index("--commit") + 1] == "sync"
    assert "isolation.level=read_committed" in args  # the same default as librdkafka's


def test_a_reader_that_falls_short_is_not_caught_up() -> None:
    container = FakeContainer([STARTED, record(0)], [DONE])
    consumer = JavaConsumer(ConsumerSpec("cr", "c", client="java"), Host(container), "t", [0], Rows(), None)
    consumer.start()
    consumer.finish({0: 5}, timeout_s=0.5)
    consumer.join(30)
    assert consumer.error is None
    assert not consumer.caught_up()


@pytest.mark.parametrize(("kwargs", "complaint"), [
    ({"commit": "auto", "group": "g"}, "reports no automatic commit"),
    ({"restart_every_s": 5.0, "group": "g"}, "is not restarted here yet"),
])
def test_what_the_java_consumer_does_not_do_is_refused(kwargs: dict[str, Any], complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        ConsumerSpec("ca", "b", client="java", **kwargs)


def test_a_transactional_java_producer_is_refused() -> None:
    with pytest.raises(ValueError, match="runs no transactions here yet"):
        ProducerSpec("pa", "a", client="java", transaction_size=10)


def test_a_scenario_on_the_java_client_moves_every_producer_and_consumer_and_says_so() -> None:
    from harness.scenario.spec import ScenarioSpec

    spec = ScenarioSpec("x", "X", producers=(ProducerSpec("pa", "a"), ProducerSpec("pb", "b")),
                        consumers=(ConsumerSpec("cb", "b"),))
    java = spec.on_client("java", "4.0.0")
    assert (java.id, java.title) == ("x-java4_0_0", "X (java client)")
    chosen = {(p.client, p.client_version) for p in java.producers}
    chosen |= {(c.client, c.client_version) for c in java.consumers}
    assert chosen == {("java", "4.0.0")}
    assert spec.on_client("librdkafka") == spec


def test_a_scenario_the_java_client_cannot_run_is_refused_when_moved() -> None:
    from harness.scenario.spec import ScenarioSpec

    spec = ScenarioSpec("t", "T", producers=(ProducerSpec("pt", "a", transaction_size=5),), consumers=())
    with pytest.raises(ValueError, match="producer pt: the Java client runs no transactions"):
        spec.on_client("java")
