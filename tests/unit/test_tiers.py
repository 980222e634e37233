"""The core tier: the claims a core marker makes, the coverage they add up to, and the
check of a claim against what a test did. The suite's own coverage is held in
test_core_coverage.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from faults.registry import fault_kinds
from harness.entry.tiers import (
    CoreClaim,
    Coverage,
    TierError,
    runs_in,
    selects_core_only,
    unmet,
)
from harness.history import ANOMALY_FAMILIES
from harness.history.verdict import judged_families


@dataclass
class _Marker:
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] | None = None


@dataclass
class _Item:
    nodeid: str
    marker: _Marker | None

    def get_closest_marker(self, name: str) -> _Marker | None:
        return self.marker if name == "core" else None


def core(nodeid: str = "t.py::test_x", *args: Any, **kwargs: Any) -> _Item:
    return _Item(nodeid, _Marker(args, kwargs))


def test_an_unmarked_test_claims_nothing_and_a_bare_marker_claims_no_kind() -> None:
    assert CoreClaim.of(_Item("t.py::test_x", None)) is None
    assert CoreClaim.of(core()) == CoreClaim()


@pytest.mark.parametrize(("kwargs", "args", "says"), [
    ({"strikes": ("kil",)}, (), "'kil' is no fault kind"),
    ({"judges": ("group",)}, (), "'group' is no anomaly family"),
    ({"strikes": "kill"}, (), "must be a tuple of names"),
    ({"strike": ("kill",)}, (), "unknown keyword 'strike'"),
    ({}, ("kill",), "takes keywords only"),
])
def test_a_claim_naming_nothing_real_is_refused_with_the_test_and_the_value(
        kwargs: dict[str, Any], args: tuple[Any, ...], says: str) -> None:
    with pytest.raises(TierError, match=says) as err:
        CoreClaim.of(core("t.py::test_mine", *args, **kwargs))
    assert "t.py::test_mine" in str(err.value)


def test_coverage_names_every_kind_and_family_no_core_test_claims() -> None:
    items = [core("a", strikes=("kill", "pause"), judges=("messages",)), _Item("b", None)]
    coverage = Coverage.of(items)
    assert coverage.core == ["a"]
    assert coverage.strikes["kill"] == ["a"]
    gaps = coverage.gaps()
    assert "no core test strikes fault kind 'isolate'" in gaps
    assert "no core test strikes fault kind 'kill'" not in gaps
    assert "no core test judges anomaly family 'groups'" in gaps
    assert len(gaps) == len(fault_kinds()) - 2 + len(ANOMALY_FAMILIES) - 1


def test_a_claim_is_unmet_when_its_kind_never_struck_or_its_family_was_not_judged() -> None:
    claim = CoreClaim(strikes=("kill", "pause"), judges=("messages", "groups"))
    judged_groups = {"groups_s": 0.4, "transactions_s": 0.0}
    assert unmet(claim, ("pause", "kill", "restart"), judged_groups) == []
    assert unmet(claim, ("pause",), judged_groups) == [
        "claims to strike 'kill', but no kill fault was injected"]
    [groups] = unmet(claim, ("kill", "pause"), {"groups_s": 0.0})
    assert "groups family" in groups and "judged only ['messages']" in groups
    assert len(unmet(claim, ("kill", "pause"), None)) == 2  # no verdict: nothing was judged


def test_the_message_pass_always_judges_and_the_others_only_with_their_data() -> None:
    assert judged_families({}) == {"messages"}
    assert judged_families({"pipelines_s": 1.2, "groups_s": 0.3, "transactions_s": 0.0}) == {
        "messages", "groups", "pipelines"}


@pytest.mark.parametrize(("tier", "from_testpaths", "markexpr", "keyword", "core_only"), [
    ("auto", True, "", "", True),  # the README's command: no paths, no -m, no -k
    ("auto", False, "", "", False),  # paths or node ids name their tests
    ("auto", True, "chaos", "", False),
    ("auto", True, "", "s05", False),
    ("all", True, "", "", False),
    ("core", False, "chaos", "", True),
])
def test_the_core_tier_is_the_default_only_when_the_command_names_no_tests(
        tier: str, from_testpaths: bool, markexpr: str, keyword: str, core_only: bool) -> None:
    assert selects_core_only(tier, from_testpaths, markexpr, keyword) is core_only


@dataclass
class _ModeItem:
    nodeid: str
    modes: tuple[str, ...] | None

    def get_closest_marker(self, name: str) -> _Marker | None:
        return _Marker(self.modes) if name == "metadata" and self.modes is not None else None


def test_a_test_of_one_modes_machinery_runs_only_in_a_session_of_that_mode() -> None:
    zookeeper_only = _ModeItem("t.py::test_expire", ("zookeeper",))
    assert runs_in(zookeeper_only, "zookeeper") and not runs_in(zookeeper_only, "kraft")
    unmarked = _ModeItem("t.py::test_kill", None)
    assert runs_in(unmarked, "zookeeper") and runs_in(unmarked, "kraft")


def test_the_collection_says_what_a_kraft_session_deselects() -> None:
    """Under pytest's "collected" line, not in the header: the header is printed before
    collection, when nothing has been deselected yet."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-p", "no:cacheprovider", "-m",
                             "chaos", "--metadata", "kraft", "--kafka-version", "3.9.1", "tests/chaos"],
                            cwd=root, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    collected = next(i for i, line in enumerate(lines) if line.startswith("collected "))
    assert lines[collected + 1].startswith("kraft mode: ") and "deselected" in lines[collected + 1], lines
