"""The suite's two tiers, and what the core tier claims to cover.

The whole chaos suite takes about an hour on a 2-core machine, so the README's test
command (``python3 -m pytest``, no paths, no ``-m``, no ``-k``) runs the *core* tier: the
unit, Spark and report tests and the chaos tests marked ``core``. Anything that names
tests - paths, node ids, ``-m chaos``, ``-k`` - selects from every test, and
``--tier all`` runs everything; ``kafka-chaos run`` is the whole suite.

A core test says what it covers in its marker::

    @pytest.mark.core(strikes=("kill", "pause"), judges=("messages",))

``strikes`` are fault kinds of :data:`faults.registry.FAULTS` the test injects on a real
cluster, ``judges`` anomaly families (:data:`harness.history.ANOMALY_FAMILIES`) its
scenario's verdict judges from a real history. A unit test holds the union of the claims
to the whole registry and every family, so a kind without a core test fails the build;
and each claim is checked when the test runs (:func:`unmet`), so a claim cannot outlive
the fault it names: a test that claims ``kill`` and never struck one errors at teardown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from faults.registry import fault_kinds
from harness.errors import ChaosError
from harness.history import ANOMALY_FAMILIES
from harness.history.verdict import judged_families

CORE_MARKER = "core"
CORE_MARKER_HELP = (f"{CORE_MARKER}(strikes=(kinds...), judges=(families...)): in the core tier "
                    "the README's test command runs; the claims are checked when the test runs")
TIERS = ("auto", "core", "all")


class TierError(ChaosError, ValueError):
    """A core marker whose claim names no such fault kind or family."""


class _Marked(Protocol):
    @property
    def nodeid(self) -> str: ...

    def get_closest_marker(self, name: str) -> Any: ...


@dataclass(frozen=True)
class CoreClaim:
    """What one core test says it covers."""

    strikes: tuple[str, ...] = ()
    judges: tuple[str, ...] = ()

    @classmethod
    def of(cls, item: _Marked) -> CoreClaim | None:
        """The claim of ``item``'s ``core`` marker; None when it is not in the core tier."""
        marker = item.get_closest_marker(CORE_MARKER)
        if marker is None:
            return None
        where = f"{item.nodeid}: @pytest.mark.{CORE_MARKER}"
        if marker.args:
            raise TierError(f"{where} takes keywords only (strikes=..., judges=...), got {marker.args!r}")
        unknown_keys = sorted(set(marker.kwargs) - {"strikes", "judges"})
        if unknown_keys:
            raise TierError(f"{where}: unknown keyword {unknown_keys[0]!r}; the keywords are strikes, judges")
        claim = cls(_names(marker.kwargs.get("strikes", ()), f"{where} strikes"),
                    _names(marker.kwargs.get("judges", ()), f"{where} judges"))
        _known(claim.strikes, fault_kinds(), f"{where} strikes", "fault kind")
        _known(claim.judges, tuple(ANOMALY_FAMILIES), f"{where} judges", "anomaly family")
        return claim


def _names(value: object, where: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise TierError(f"{where} must be a tuple of names, got {value!r}")
    names = tuple(value)
    if not all(isinstance(n, str) for n in names):
        raise TierError(f"{where} must be a tuple of names, got {value!r}")
    return names


def _known(names: Sequence[str], known: Sequence[str], where: str, what: str) -> None:
    for name in names:
        if name not in known:
            raise TierError(f"{where}: {name!r} is no {what}; known: {', '.join(known)}")


@dataclass
class Coverage:
    """Which core tests claim each fault kind and anomaly family."""

    strikes: dict[str, list[str]] = field(default_factory=lambda: {k: [] for k in fault_kinds()})
    judges: dict[str, list[str]] = field(default_factory=lambda: {f: [] for f in ANOMALY_FAMILIES})
    core: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, items: Iterable[_Marked]) -> Coverage:
        coverage = cls()
        for item in items:
            claim = CoreClaim.of(item)
            if claim is None:
                continue
            coverage.core.append(item.nodeid)
            for kind in claim.strikes:
                coverage.strikes[kind].append(item.nodeid)
            for family in claim.judges:
                coverage.judges[family].append(item.nodeid)
        return coverage

    def gaps(self) -> list[str]:
        """One sentence per fault kind and anomaly family no core test claims."""
        return ([f"no core test strikes fault kind {k!r}" for k, ids in self.strikes.items() if not ids]
                + [f"no core test judges anomaly family {f!r}" for f, ids in self.judges.items() if not ids])


def unmet(claim: CoreClaim, struck: Sequence[str], timings: Mapping[str, float] | None) -> list[str]:
    """What of ``claim`` the test did not do: kinds it never struck, families its verdict
    did not judge (all of them when it reached no verdict)."""
    problems = [f"claims to strike {k!r}, but no {k} fault was injected"
                for k in claim.strikes if k not in struck]
    if claim.judges:
        judged = {f.value for f in judged_families(timings)} if timings is not None else set()
        reached = "no verdict was reached" if timings is None else f"its verdict judged only {sorted(judged)}"
        problems += [f"claims to judge the {family} family, but {reached}"
                     for family in claim.judges if family not in judged]
    return problems


def selects_core_only(tier: str, from_testpaths: bool, markexpr: str, keyword: str) -> bool:
    """Whether a session runs the core tier of the chaos tests: asked for with
    ``--tier core``, or by default when the command names no tests at all."""
    if tier == "core":
        return True
    return tier == "auto" and from_testpaths and not markexpr and not keyword


METADATA_MARKER = "metadata"
METADATA_MARKER_HELP = (f"{METADATA_MARKER}(modes...): a test of one metadata mode's own machinery "
                        "(ZooKeeper's sessions, /controller); deselected in a session of another mode")


def runs_in(item: _Marked, mode: str) -> bool:
    """Whether ``item`` runs in a session of metadata mode ``mode``: every test does but
    one whose ``metadata`` marker names other modes only."""
    marker = item.get_closest_marker(METADATA_MARKER)
    return marker is None or mode in marker.args
