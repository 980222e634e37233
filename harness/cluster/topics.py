"""Topic administration: the harness's AdminClient and creating topics that are ready.

Why a part of its own: creating a topic is a Kafka client's job (librdkafka's
AdminClient, its NOT_CONTROLLER quirk) followed by a wait on the metadata, and has nothing
to do with containers or health. :class:`~harness.cluster.lifecycle.Cluster` owns one
:class:`TopicAdmin` and keeps ``create_topic`` and ``admin`` as its own API by
delegating here. The AdminClient connects through the observer links, which no fault
cuts, and is built on first use because the observer ports are only known once the
cluster has started. A client that leaves a CreateTopics unanswered is replaced once
before the topic is given up.
"""

from __future__ import annotations

import concurrent.futures

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from harness.cluster.control import ClusterObservation
from harness.cluster.node_config import format_value
from harness.cluster.waiting import CLUSTER_SETTLING, Problems, WaitTimeout, wait_until_clear
from harness.errors import describe_error
from topologies.model import SettingValue, Topology

NOT_CONTROLLER_RIDE_OUT_S = 10.0
"""How long a CreateTopics the brokers refuse as NOT_CONTROLLER (the controller moved) is
asked again, 0.5 s apart, before the refusal is raised."""


class TopicNotCreated(RuntimeError):
    """CreateTopics got no answer, though the request was made twice."""


class TopicAdmin:
    """Topics of one cluster, created through a long-lived AdminClient.

    ``client`` is the AdminClient once built, or None; setting it to None makes the next
    use build a fresh one (a client can keep addressing a controller from before an
    election).
    """

    def __init__(self, topology: Topology, run_id: str, observation: ClusterObservation) -> None:
        self.topology = topology
        self.run_id = run_id
        self._observation = observation
        self.client: AdminClient | None = None

    @property
    def admin(self) -> AdminClient:
        if self.client is None:
            self.client = AdminClient({
                "bootstrap.servers": self._observation.observer_bootstrap(),
                "client.id": f"kafka-chaos-admin-{self.run_id}",
                "log_level": 3,  # connection noise while faults are active
            })
        return self.client

    def create_topic(
        self,
        name: str,
        partitions: int | None = None,
        replication_factor: int | None = None,
        config: dict[str, SettingValue] | None = None,
        assignment: dict[int, list[int]] | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        """Create a topic and wait until the metadata shows a leader and full ISR everywhere."""
        defaults = self.topology.topic_defaults
        settings = {k: format_value(v) for k, v in (config or {}).items()}
        if assignment is not None:
            # confluent-kafka wants the partition count spelled out beside the assignment.
            new = NewTopic(
                name,
                num_partitions=len(assignment),
                replica_assignment=[assignment[p] for p in sorted(assignment)],
                config=settings,
            )
        else:
            rf = replication_factor or self.topology.default_replication_factor
            self.topology.check_replication_factor(rf)
            count = partitions or int(defaults.get("partitions", 6))
            new = NewTopic(name, num_partitions=count, replication_factor=rf, config=settings)
        unanswered = False  # an attempt's CreateTopics got no answer at all
        refused: list[KafkaException] = []  # NOT_CONTROLLER answers so far
        stale = False  # the last answer was NOT_CONTROLLER: the client's controller is stale

        def not_created() -> Problems:
            nonlocal unanswered, stale
            if stale:
                # librdkafka keeps the controller id of its last metadata answer until
                # its periodic refresh; a metadata request brings the new controller.
                self.admin.list_topics(timeout=10)
                stale = False
            futures = self.admin.create_topics([new], operation_timeout=timeout_s)
            try:
                futures[name].result(timeout=timeout_s)
            except concurrent.futures.TimeoutError:
                if unanswered:
                    raise TopicNotCreated(
                        f"topic {name}: CreateTopics unanswered for {timeout_s:g} s, by the "
                        "harness's AdminClient and by a fresh one"
                    ) from None
                # Seen once in CI, after every broker lost power in the test before: three
                # tests' requests of the long-lived client went unanswered (no broker
                # logged one) while new clients worked. A fresh one looks the controller up.
                unanswered = True
                self.client = None
                return f"CreateTopics unanswered for {timeout_s:g} s; asking a fresh AdminClient"
            except KafkaException as err:
                code = err.args[0].code() if err.args else None
                if code == KafkaError.TOPIC_ALREADY_EXISTS and unanswered:
                    return None  # the unanswered request created it after all: names are the run's own
                if code != KafkaError.NOT_CONTROLLER:
                    raise
                refused.append(err)
                stale = True
                return f"CreateTopics refused: {describe_error(err)}"
            return None

        # Up to two requests may each go unanswered for timeout_s; NOT_CONTROLLER answers
        # are asked again for NOT_CONTROLLER_RIDE_OUT_S besides.
        try:
            wait_until_clear(not_created, 2 * timeout_s + NOT_CONTROLLER_RIDE_OUT_S,
                             f"topic {name} to be created", interval_s=0.5)
        except WaitTimeout as timeout:
            if not refused:
                raise
            raise refused[-1] from timeout  # the controller never settled: its refusal, as before

        def short_partitions() -> Problems:
            states = self._observation.topic_state(name)
            if not states:
                return f"{name} not in the metadata yet"
            return [f"{name}-{s.partition} leader {s.leader} isr {list(s.isr)} replicas {list(s.replicas)}"
                    for s in states if not (s.online and s.isr_full)]

        wait_until_clear(short_partitions, timeout_s, f"topic {name} to have leaders and full ISRs",
                         transient=CLUSTER_SETTLING)
        self._wait_leaders_serve(name, timeout_s)

    def _wait_leaders_serve(self, name: str, timeout_s: float) -> None:
        """Wait until every partition's leader answers for it (ListOffsets). ZooKeeper
        names the leader before the broker has processed its LeaderAndIsr request, and a
        produce sent in between is refused UNKNOWN_TOPIC_OR_PART; an idempotent
        librdkafka producer was then seen to report four such refused messages delivered,
        with no offset, though they never reached the log. A workload starts on a topic
        its leaders serve."""
        partitions = [s.partition for s in self._observation.topic_state(name)]
        reader = Consumer({"bootstrap.servers": self._observation.observer_bootstrap(),
                           "group.id": f"kafka-chaos-ready-{self.run_id}", "log_level": 3})

        def unserved() -> Problems:
            missing = []
            for partition in partitions:
                try:
                    reader.get_watermark_offsets(TopicPartition(name, partition), timeout=5, cached=False)
                except KafkaException as err:
                    missing.append(f"{name}-{partition}: {err.args[0].name() if err.args else err}")
            return missing

        try:
            wait_until_clear(unserved, timeout_s, f"the leaders of topic {name} to serve it",
                             transient=CLUSTER_SETTLING)
        finally:
            reader.close()


__all__ = ["TopicAdmin", "TopicNotCreated"]
