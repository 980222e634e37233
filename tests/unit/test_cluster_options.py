"""The cluster options are declared once: the CLI and the pytest plugin offer the same
flags with the same defaults, and the environment sets a default for both alike."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from harness.entry.cli import build_parser
from harness.entry.cluster_options import (
    CLUSTER_OPTIONS,
    KAFKA_VERSION,
    RUN_OPTIONS,
    ClusterOption,
    add_pytest_options,
    cluster_flags,
)


class _Group:
    def __init__(self) -> None:
        self.options: dict[str, dict[str, Any]] = {}

    def addoption(self, flag: str, **kwargs: Any) -> None:
        self.options[flag] = kwargs


def _subcommand(name: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


def _cli_defaults(name: str, options: tuple[ClusterOption, ...] = CLUSTER_OPTIONS) -> dict[str, Any]:
    actions = {a.option_strings[0]: a for a in _subcommand(name)._actions if a.option_strings}
    return {o.flag: (actions[o.flag].default, actions[o.flag].help) for o in options}


def _plugin_defaults(options: tuple[ClusterOption, ...] = CLUSTER_OPTIONS) -> dict[str, Any]:
    group = _Group()
    add_pytest_options(group)
    return {flag: (kw["default"], kw["help"]) for flag, kw in group.options.items()
            if flag in {o.flag for o in options}}


@pytest.mark.parametrize("command", ["run", "explore", "replay", "shrink"])
def test_the_cli_and_the_plugin_offer_the_same_cluster_options(command: str) -> None:
    assert _cli_defaults(command) == _plugin_defaults()


@pytest.mark.parametrize("command", ["run", "replay"])
def test_the_commands_that_run_scenarios_offer_the_plugins_client_option_too(command: str) -> None:
    assert _cli_defaults(command, RUN_OPTIONS) == _plugin_defaults(RUN_OPTIONS)
    assert "--client" in _plugin_defaults(RUN_OPTIONS)


def test_the_environment_sets_the_default_of_both(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_CHAOS_VERSION", "3.9.1")
    assert _cli_defaults("run")[KAFKA_VERSION.flag][0] == _plugin_defaults()[KAFKA_VERSION.flag][0] == "3.9.1"


def test_only_options_off_their_default_are_repeated_for_a_replay() -> None:
    args = _subcommand("explore").parse_args(["x.toml", "--kafka-version", "3.9.1", "--topology", "three_az"])
    assert cluster_flags(args) == "--kafka-version 3.9.1"
