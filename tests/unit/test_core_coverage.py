"""What the core tier of this suite covers, derived from the core markers of the chaos
tests pytest collects: every fault kind of the registry struck on a real cluster, every
anomaly family judged from a real history, one scenario of each family and an
exploration round. Removing the only core test of a kind fails here, by name."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from harness.entry.tiers import Coverage

ROOT = Path(__file__).resolve().parents[2]
SCENARIO_MODULE = re.compile(r"tests/chaos/scenarios/test_([a-z])\d\d_")
SCENARIO_FAMILIES = ("s", "d", "g", "t", "p", "c")
EXPLORE_MODULE = "tests/chaos/test_explore.py"


class _Collected:
    def __init__(self) -> None:
        self.items: list[pytest.Item] = []

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.items = list(session.items)


@pytest.fixture(scope="module")
def chaos_tests() -> list[pytest.Item]:
    collected = _Collected()
    with contextlib.redirect_stdout(io.StringIO()):
        code = pytest.main(["--collect-only", "-q", "-m", "chaos", "-p", "no:cacheprovider",
                            "--rootdir", str(ROOT), str(ROOT / "tests" / "chaos")], plugins=[collected])
    assert code == pytest.ExitCode.OK, f"collecting the chaos tests failed (exit {code})"
    assert len(collected.items) > 50, len(collected.items)
    return collected.items


def test_every_fault_kind_and_anomaly_family_has_a_core_test(chaos_tests: list[pytest.Item]) -> None:
    gaps = Coverage.of(chaos_tests).gaps()
    assert not gaps, "\n".join(gaps)


def test_the_core_tier_holds_a_scenario_of_each_family_and_an_exploration_round(
        chaos_tests: list[pytest.Item]) -> None:
    core = Coverage.of(chaos_tests).core
    families = {m.group(1) for nodeid in core if (m := SCENARIO_MODULE.match(nodeid))}
    assert families == set(SCENARIO_FAMILIES), f"core scenario families {sorted(families)}"
    assert any(nodeid.startswith(EXPLORE_MODULE) for nodeid in core), "no exploration round in the core tier"


def test_the_core_tier_is_a_part_of_the_chaos_suite(chaos_tests: list[pytest.Item]) -> None:
    core = Coverage.of(chaos_tests).core
    assert 0 < len(core) < len(chaos_tests) / 2, (len(core), len(chaos_tests))
