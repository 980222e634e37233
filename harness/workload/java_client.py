"""Kafka's Java client as a workload client: a producer or consumer run by the driver in a
container of its own, recorded through the same rows as librdkafka's.

Each client is a thread of the workload, like librdkafka's loops: it starts the driver
(:mod:`harness.cluster.client_containers`), reads its event lines as they come
(:mod:`harness.workload.java_events`) into the workload's recorder, and stops it with
SIGTERM when the workload stops. A producer's SIGTERM makes the driver stop sending and
wait for the outcome of every send still outstanding (bounded by its delivery timeout), so
the history holds an outcome for every send, as librdkafka's drain gives. A client that
exits before it printed ``shutdown_complete``, exits non-zero, prints a line that cannot
be read, or outlives its bound is a client error: the scenario fails on it, with the
driver's stderr in the text.
"""

from __future__ import annotations

import codecs
import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from harness.cluster.waiting import Problems, WaitTimeout, wait_until_clear
from harness.errors import describe_error
from harness.workload.client_settings import CONSUMER, PRODUCER, java_config
from harness.workload.java_events import EventReader, EventSource

Record = Callable[[str, Mapping[str, Any]], None]
# How long past its own bound (the delivery timeout, for a producer) a stopping driver may
# take: a JVM's exit and the container's on a loaded machine.
STOP_MARGIN_S = 30.0
STDERR_LINES = 20  # in a client error's text
STDERR_KEPT = 2000  # in the run's record of the client
# A JVM that ran its shutdown hooks after SIGTERM exits 128 + 15; 0 if it ended first.
STOPPED_AS_TOLD = (0, 143)
JAVA_CLIENTS_FILE = "java_clients.json"  # the run's records of its Java clients, in a scenario's folder


class DriverContainer(Protocol):
    """What the workload needs of a driver's container (a docker-py Container has it)."""

    def logs(self, *, stream: bool = False, follow: bool = False, stdout: bool = True, stderr: bool = True,
             tail: int | None = None) -> Any: ...

    def kill(self, signal: str | None = None) -> Any: ...

    def wait(self, *, timeout: float | None = None) -> Mapping[str, Any]: ...

    def remove(self, *, force: bool = False) -> Any: ...


class JavaContainers(Protocol):
    """Starts driver containers (:class:`~harness.cluster.client_containers.ClientContainers`)."""

    def java_image(self, version: str | None) -> str: ...

    def start_java(self, version: str | None, name: str, arguments: Sequence[str]) -> DriverContainer: ...


class ClientHost(Protocol):
    """Where a Java client runs: the zone's bootstrap list and the run's client containers."""

    def bootstrap_servers(self, zone: str) -> str: ...

    @property
    def client_containers(self) -> JavaContainers: ...


class DriverProcess:
    """One driver container, and the thread that records its lines as they come."""

    def __init__(self, host: ClientHost, version: str | None, reader: EventReader, arguments: Sequence[str],
                 record: Record) -> None:
        self.host, self.version, self.reader, self.arguments = host, version, reader, list(arguments)
        self.record = record
        # Built (or found) now, so a first run's image build is not part of the workload's time.
        self.image = host.client_containers.java_image(version)
        self.container: DriverContainer | None = None
        self.error: str | None = None
        self.stderr = ""  # what the driver wrote on stderr (the JVM's and the client's own messages)
        self._pump = threading.Thread(target=self._read, name=f"java-{reader.source.name}-lines", daemon=True)

    def start(self) -> None:
        source = self.reader.source
        self.container = self.host.client_containers.start_java(self.version, source.name, self.arguments)
        self._pump.start()

    def _read(self) -> None:
        assert self.container is not None
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        try:
            for chunk in self.container.logs(stream=True, follow=True, stdout=True, stderr=False):
                for table, row in self.reader.feed(decoder.decode(chunk)):
                    self.record(table, row)
            for table, row in self.reader.feed(decoder.decode(b"", final=True)):
                self.record(table, row)
            self.reader.close()
        except Exception as exc:  # a line that cannot be read: recorded, the rows before it kept
            self.error = describe_error(exc)

    def stop(self, bound_s: float) -> None:
        """SIGTERM, then wait ``bound_s`` for the driver to finish and exit; a driver that
        does not is killed, and every way of ending short is recorded as the error. The
        container goes once its stderr is kept, so no client outlives its scenario."""
        if self.container is None:
            return
        try:
            self._stop(bound_s)
        finally:
            with contextlib.suppress(Exception):  # gone already; the run's cleanup is the net
                self.container.remove(force=True)

    def _stop(self, bound_s: float) -> None:
        assert self.container is not None
        with contextlib.suppress(Exception):  # already gone: its exit status says why
            self.container.kill(signal="SIGTERM")
        self._pump.join(bound_s)
        if self._pump.is_alive():
            with contextlib.suppress(Exception):
                self.container.kill()
            self._pump.join(STOP_MARGIN_S)
            self.stderr = self._stderr(STDERR_KEPT)
            self._fail(f"did not stop within {bound_s:.0f} s of SIGTERM and was killed")
            return
        status = self.container.wait(timeout=STOP_MARGIN_S).get("StatusCode")
        self.stderr = self._stderr(STDERR_KEPT)
        if status not in STOPPED_AS_TOLD:
            self._fail(f"exited with status {status}")
        elif not self.reader.shut_down:
            self._fail("exited before it printed shutdown_complete")

    def _fail(self, why: str) -> None:
        """Record ``why`` (unless a line already failed) with the driver's last stderr lines."""
        if self.error is None:
            self.error = f"the Java {self.reader.source.role} {why}"
        if self.reader.skipped:
            self.error += f" ({self.reader.skipped} lines on stdout were not events)"
        tail = self._stderr(STDERR_LINES)
        if tail.strip():
            self.error += "; its stderr ends:\n" + tail.rstrip()

    def _stderr(self, lines: int) -> str:
        """The last ``lines`` lines the driver wrote on stderr; empty when they cannot be read."""
        if self.container is None:
            return ""
        try:
            return bytes(self.container.logs(stdout=False, stderr=True, tail=lines)).decode(errors="replace")
        except Exception:  # the container is gone: nothing more to read
            return ""

    def summary(self) -> dict[str, Any]:
        """What the run keeps of this client: its release, its effective configuration as
        the driver printed it, the lines that were not events, and its stderr."""
        source = self.reader.source
        return {"role": source.role, "image": self.image,
                "config": self.reader.config, "skipped_lines": self.reader.skipped, "stderr": self.stderr}

    def alive_problem(self) -> str | None:
        """Why the driver can no longer report (it died or a line failed), or None."""
        if self.error is not None:
            return self.error
        ended = self._pump.ident is not None and not self._pump.is_alive()
        return "the driver's output ended early" if ended else None


class JavaProducer(threading.Thread):
    """A producer of ``spec`` on the Java client: sends until the workload stops."""

    def __init__(self, spec: Any, host: ClientHost, topic: str, partitions: Sequence[int], record: Record,
                 stop: threading.Event) -> None:
        super().__init__(name=f"producer-{spec.name}", daemon=True)
        self.spec, self.topic, self.stop = spec, topic, stop
        who = f"producer {spec.name}"
        config = java_config(PRODUCER, spec.settings, who)
        self.bound_s = int(config["delivery.timeout.ms"]) / 1000 + STOP_MARGIN_S
        self.reader = EventReader(EventSource(spec.name, spec.zone, PRODUCER))
        chosen = list(spec.partitions if spec.partitions is not None else partitions)
        arguments = ["producer", "--bootstrap", host.bootstrap_servers(spec.zone), "--topic", topic,
                     "--name", spec.name, "--partitions", ",".join(map(str, chosen)),
                     "--rate", repr(float(spec.rate_per_s)), *_settings(config)]
        self.process = DriverProcess(host, spec.client_version, self.reader, arguments, record)
        self.error: str | None = None

    @property
    def outcomes(self) -> dict[str, int]:
        return self.reader.outcomes

    @property
    def last_acked(self) -> dict[int, int]:
        return self.reader.last_acked

    def run(self) -> None:
        try:
            self.process.start()
            self.stop.wait()
            self.process.stop(self.bound_s)
            self.error = self.process.error
        except BaseException as exc:  # recorded: the scenario fails on a producer that died
            self.error = describe_error(exc)

    def drain(self, timeout_s: float) -> None:
        """Outstanding sends were waited for when the driver stopped (``run``)."""


class JavaConsumer(threading.Thread):
    """A consumer of ``spec`` on the Java client: reads from the start (or as a group
    member, from the group's offsets) until told to finish and caught up."""

    def __init__(self, spec: Any, host: ClientHost, topic: str, partitions: Sequence[int], record: Record,
                 progress: Any | None) -> None:
        super().__init__(name=f"consumer-{spec.name}", daemon=True)
        self.spec, self.topic, self.progress = spec, topic, progress
        who = f"consumer {spec.name}"
        config = java_config(CONSUMER, spec.settings, who)
        self.reader = EventReader(EventSource(spec.name, spec.zone, CONSUMER, spec.group,
                                              config["isolation.level"]))
        group = [] if spec.group is None else ["--group", spec.group, "--commit", spec.commit]
        arguments = ["consumer", "--bootstrap", host.bootstrap_servers(spec.zone), "--topic", topic,
                     "--name", spec.name, "--partitions", ",".join(map(str, partitions)), *group,
                     "--process-ms", str(int(spec.process_ms)), *_settings(config)]

        def recorded(table: str, row: Mapping[str, Any]) -> None:
            record(table, row)
            if table == "polls" and self.progress is not None:
                self.progress.read(row["partition"], row["offset"])

        self.process = DriverProcess(host, spec.client_version, self.reader, arguments, recorded)
        self.error: str | None = None
        self._finish = threading.Event()
        self._targets: dict[int, int] = {}
        self._timeout_s = 0.0

    def finish(self, targets: Mapping[int, int], timeout_s: float) -> None:
        """Stop once every ``partition -> offset`` in ``targets`` was read (by the group, for
        a member), or after ``timeout_s``."""
        self._targets, self._timeout_s = dict(targets), timeout_s
        self._finish.set()

    def caught_up(self) -> bool:
        if self.progress is not None:
            return bool(self.progress.caught_up(self._targets))
        return all(self.reader.next_offsets.get(p, 0) > offset for p, offset in self._targets.items())

    def run(self) -> None:
        try:
            self.process.start()
            self._finish.wait()

            def unread() -> Problems:
                problem = self.process.alive_problem()
                if problem is not None:
                    return None  # nothing more will be read: stop now, the error says why
                return None if self.caught_up() else f"{self.spec.name} still reading"

            with contextlib.suppress(WaitTimeout):  # lagging_consumers() reports what it missed
                wait_until_clear(unread, self._timeout_s, f"consumer {self.spec.name} catching up",
                                 interval_s=0.1)
            self.process.stop(STOP_MARGIN_S)
            self.error = self.process.error
        except BaseException as exc:  # recorded: the scenario fails on a consumer that died
            self.error = describe_error(exc)


def _settings(config: Mapping[str, str]) -> list[str]:
    return [arg for key, value in sorted(config.items()) for arg in ("--set", f"{key}={value}")]
