"""The broker settings a scenario needs: refused before anything starts when the cluster
does not run them, and checked against each broker's own answer once it runs.

Kafka ignores a setting it does not know, so a misspelt name would otherwise run the
scenario on a cluster without it; only the broker's own description of its
configuration shows that a setting is in force.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from harness.cluster.node_config import format_value
from harness.cluster.waiting import wait_until
from harness.errors import ChaosError
from harness.scenario.spec_check import ScenarioSpecError, topology_problems

if TYPE_CHECKING:
    from harness.cluster.lifecycle import Cluster
    from harness.scenario.runner import ScenarioRun

CONFIG_REQUEST_TIMEOUT_S = 15.0
"""How long one DescribeConfigs may take before it is asked again (see :func:`broker_config`)."""
CHECK_NAME = "brokers run the scenario's broker settings"


class ScenarioError(ChaosError):
    """A scenario that cannot run on the cluster it was given."""


def refuse_unrunnable(run: ScenarioRun) -> None:
    """A scenario the cluster cannot run (more replicas than brokers, a broker or zone it
    lacks), or needing broker settings it was not started with, which would test
    something else: refused with :class:`ScenarioError` before anything is created."""
    problems = topology_problems(run.spec, run.cluster.topology)
    if problems:
        refused = ScenarioSpecError(problems, f"scenario {run.scenario_id}")
        raise ScenarioError("\n".join(refused.lines()))
    running = {k: format_value(v) for k, v in run.cluster.broker_settings().items()}
    missing = [f"{k}={format_value(v)} (cluster: {running.get(k, 'unset')})"
               for k, v in run.spec.broker_settings.items() if running.get(k) != format_value(v)]
    if missing:
        raise ScenarioError(
            f"scenario {run.scenario_id} needs broker settings this cluster does not run: "
            f"{', '.join(missing)}; run it with `kafka-chaos run FILE`, which starts a cluster "
            "with a scenario file's [brokers] settings")


def check_broker_settings(run: ScenarioRun) -> None:
    """Ask every broker for the scenario's settings; one check of the run."""
    declared = {k: format_value(v) for k, v in run.spec.broker_settings.items()}
    if not declared:
        return
    try:
        brokers = run.cluster.topology.brokers
        reported = {b.broker_id: broker_config(run.cluster, b.broker_id) for b in brokers}
    except Exception as err:  # any admin failure: the check cannot pass unread
        run.check(CHECK_NAME, False, f"the brokers' configuration could not be read: {err}")
        return
    differences = broker_setting_differences(declared, reported)
    listing = ", ".join(f"{k}={v}" for k, v in declared.items())
    run.check(CHECK_NAME, not differences, "; ".join(differences)
              or f"{listing} on brokers {', '.join(map(str, sorted(reported)))}, as each reports it")


def broker_config(cluster: Cluster, broker_id: int) -> dict[str, str | None]:
    """One broker's configuration, as it reports it.

    DescribeConfigs for a broker goes to that broker itself. Right after a cluster
    starts, the admin client's first connection to it can fail although the broker is
    registered (a KRaft run once failed T2 here: "Failed while waiting for broker").
    A registered broker that stays unreachable is fenced within its registration
    timeout, so the read is retried with a fresh admin client until that has passed
    twice over; beyond it the failure is the broker's and is reported."""
    from concurrent.futures import TimeoutError as FutureTimeout

    from confluent_kafka import KafkaException
    from confluent_kafka.admin import ConfigResource, ResourceType

    resource = ConfigResource(ResourceType.BROKER, str(broker_id))
    config: dict[str, str | None] = {}

    def read() -> bool:
        try:
            [future] = cluster.admin.describe_configs(
                [resource], request_timeout=CONFIG_REQUEST_TIMEOUT_S).values()
            answer = future.result(timeout=2 * CONFIG_REQUEST_TIMEOUT_S)
        except (KafkaException, FutureTimeout):
            cluster._admin = None  # the next try connects afresh
            raise
        config.update({name: entry.value for name, entry in answer.items()})
        return True

    bound = 2 * cluster.metadata.registration_timeout_s + CONFIG_REQUEST_TIMEOUT_S
    wait_until(read, bound, f"broker {broker_id}'s configuration", transient=(KafkaException, FutureTimeout))
    return config


def broker_setting_differences(declared: Mapping[str, str],
                               reported: Mapping[int, Mapping[str, str | None]]) -> list[str]:
    """Where a broker's own configuration differs from the settings a scenario declared.

    Kafka ignores a setting it does not know, so a misspelt name would otherwise run the
    scenario on a cluster without it; ``reported`` is broker id -> name -> value as the
    broker describes it (values as config files spell them, see ``format_value``).
    """
    differences = []
    for broker, config in sorted(reported.items()):
        for key, value in declared.items():
            if key not in config:
                differences.append(f"broker {broker} does not know {key}")
            elif config[key] != value:
                differences.append(f"broker {broker} has {key}={config[key]}, not {value}")
    return differences
