"""The options that choose a run's cluster, declared once for the CLI and the pytest plugin.

``kafka-chaos run`` hands its cluster options on to pytest, and a user moves between the
two; an option spelled, defaulted or explained differently in each is a trap. Each option
is declared here with its flag, its default, the environment variable that may set that
default, and its help; :func:`add_arguments` gives them to an argparse command and
:func:`add_pytest_options` to the plugin.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.cluster.versions import DEFAULT_VERSION, release
from harness.workload.client_settings import DEFAULT_CLIENT, ClientChoice
from topologies.model import METADATA_MODES

DEFAULT_TOPOLOGY = "three_az"


@dataclass(frozen=True)
class ClusterOption:
    """One option: ``flag`` as typed, its default (``env``, when set and not empty, takes
    its place) and its help."""

    flag: str
    help: str
    default: str | None
    env: str | None = None
    choices: tuple[str, ...] | None = None

    @property
    def dest(self) -> str:
        """The attribute argparse and pytest store the value under."""
        return self.flag.lstrip("-").replace("-", "_")

    def default_now(self) -> str | None:
        """The default as the environment sets it now."""
        return (os.environ.get(self.env) or self.default) if self.env else self.default


KAFKA_VERSION = ClusterOption(
    "--kafka-version",
    f"the Kafka release the cluster runs (default {DEFAULT_VERSION}, or $KAFKA_CHAOS_VERSION; "
    "'kafka-chaos versions' lists them)",
    DEFAULT_VERSION, env="KAFKA_CHAOS_VERSION")
TOPOLOGY = ClusterOption(
    "--topology",
    f"a built-in topology's name or a topology TOML file (default {DEFAULT_TOPOLOGY}, or "
    "$KAFKA_CHAOS_TOPOLOGY)",
    DEFAULT_TOPOLOGY, env="KAFKA_CHAOS_TOPOLOGY")
METADATA = ClusterOption(
    "--metadata",
    "the metadata mode: 'kraft' runs a ZooKeeper topology's KRaft variant (three_az's is "
    "three_az_kraft); default: the topology's own, or $KAFKA_CHAOS_METADATA",
    None, env="KAFKA_CHAOS_METADATA", choices=METADATA_MODES)
RUN_ID = ClusterOption(
    "--run-id", "the run's name: its report goes to reports/<run id>/ (default: time-based)", None)
CLUSTER_OPTIONS = (KAFKA_VERSION, TOPOLOGY, METADATA, RUN_ID)
CLIENT = ClusterOption(
    "--client",
    "the client every scenario's producers and consumers run on: librdkafka (default), java "
    "(Kafka's Java client of the cluster's release) or java:VERSION; or $KAFKA_CHAOS_CLIENT",
    DEFAULT_CLIENT.spelled, env="KAFKA_CHAOS_CLIENT")
# The options of a command that runs scenarios: the cluster's, and the client.
RUN_OPTIONS = (*CLUSTER_OPTIONS, CLIENT)


def checked_version(value: str) -> str:
    """``value`` if it is a supported release; the release look-up's error names the
    supported ones otherwise."""
    release(value)
    return value


def checked_client(value: str) -> str:
    """``value`` if it names a client (and a release for the Java client's); else the
    sentence saying why not."""
    ClientChoice.parse(value)
    return value


# How argparse converts an option's text (the plugin checks the version when the cluster starts).
_TYPES: Mapping[str, Callable[[str], Any]] = {KAFKA_VERSION.flag: checked_version,
                                               CLIENT.flag: checked_client}


def add_arguments(command: argparse.ArgumentParser, options: tuple[ClusterOption, ...] = CLUSTER_OPTIONS,
                  helps: Mapping[ClusterOption, str] | None = None) -> None:
    """Give ``options`` to an argparse command; ``helps`` words one differently there
    (what a topology means to ``check``)."""
    for option in options:
        command.add_argument(option.flag, default=option.default_now(), choices=option.choices,
                             type=_TYPES.get(option.flag, str),
                             help=(helps or {}).get(option, option.help))


def add_pytest_options(group: Any) -> None:
    """Give every cluster option, and the client, to the plugin's option group."""
    for option in RUN_OPTIONS:
        group.addoption(option.flag, default=option.default_now(), choices=option.choices, help=option.help)


def cluster_flags(values: argparse.Namespace) -> str:
    """The cluster options of ``values`` that differ from their declared defaults, as flags
    to paste after a command that must run on the same cluster (a round's replay)."""
    flags = []
    for option in (KAFKA_VERSION, TOPOLOGY, METADATA):
        value = getattr(values, option.dest)
        if value and value != option.default:
            flags.append(f"{option.flag} {value}")
    return " ".join(flags)
