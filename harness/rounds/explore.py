"""``kafka-chaos explore``: rounds of random fault schedules against one safety
configuration, each judged by what that configuration promises (a failing round is cut
down by :mod:`harness.rounds.shrink_round`).

Each round draws its schedule from the whole fault library (:mod:`harness.explore`) with
its own seed (:func:`~harness.rounds.explore_round.round_seed`), becomes an ordinary
scenario (:func:`~harness.rounds.explore_round.round_spec`) and runs through
:meth:`ChaosRun.run_case`, the lifecycle every test gets: a healthy cluster before,
diagnostics of a failure, health restored or the cluster replaced after. So every round
has its page in the run's report and its ``scenario.toml``, which replays it with
``kafka-chaos run``. The exploration stops after ``rounds`` rounds or once ``minutes``
have passed (a round already started is finished), or, with ``until_violation``, after
the first round that violates something: the question "how long until it breaks" then
costs no more rounds than its answer.

Everything a user gives is checked before any container starts.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faults.registry import fault_kinds
from harness.cluster.lifecycle import Cluster
from harness.cluster.migration.plan import MigrationSpec
from harness.explore.coverage import coverage, kinds_not_exercised, table
from harness.explore.generator import MIGRATION_PHASES, KindsInTurn, Space, draw_schedule, planned_entries
from harness.rounds.explore_round import round_seed, round_spec, violations
from harness.rounds.live import LiveProgress
from harness.scenario.chaos_run import PASSED, ChaosRun
from harness.scenario.file_format import ScenarioFileError
from harness.scenario.runner import ScenarioRun, ScenarioSpec
from harness.scenario.spec_runner import run_spec

Progress = Callable[[str], None]

MIGRATION = "migration"
DURING: tuple[str | None, ...] = (None, MIGRATION)
# A migration round holds dual-write this long: long enough for a fault anchored to it to
# strike and heal inside it (drawn durations are 2-20 s), short enough for a round to
# take about four minutes.
ROUND_HOLD_S = 30.0


@dataclass(frozen=True)
class ExploreOptions:
    """What a user chooses: the seed, how long, which faults and how many at once."""

    seed: int
    rounds: int | None = None
    minutes: float | None = None
    kinds: tuple[str, ...] = ()
    max_concurrent: int = 2
    until_violation: bool = False  # stop after the first round that violates something
    # "migration": each round walks a ZooKeeper-to-KRaft migration on a cluster of its
    # own, its faults anchored to the walk's phases; None: faults timed from the start.
    during: str | None = None

    def __post_init__(self) -> None:
        if (self.rounds is None) == (self.minutes is None):
            raise ScenarioFileError("explore: give exactly one of --rounds and --minutes")
        if self.rounds is not None and self.rounds < 1:
            raise ScenarioFileError("explore: --rounds must be at least 1")
        if self.minutes is not None and self.minutes <= 0:
            raise ScenarioFileError("explore: --minutes must be positive")
        unknown = sorted(set(self.kinds) - set(fault_kinds()))
        if unknown:
            raise ScenarioFileError(f"explore: unknown fault kind(s) {', '.join(unknown)}; "
                                    f"known: {', '.join(fault_kinds())}")
        if self.max_concurrent < 1:
            raise ScenarioFileError("explore: --max-concurrent must be at least 1")
        if self.during not in DURING:
            raise ScenarioFileError(f"explore: --during {self.during!r} is not something to explore during; "
                                    f"choices: {', '.join(d for d in DURING if d)}")


@dataclass
class Exploration:
    """The rounds run so far, in order: ids, outcomes, schedules and what each violated.

    A round that failed without violating anything (a fault that could not strike as
    drawn, a client that died, too few acknowledgements) is *inconclusive*: it failed,
    and the report says so, but it is not a finding about Kafka."""

    seed: int
    kinds: tuple[str, ...] = ()  # the kinds drawn from
    outcomes: list[tuple[str, str]] = field(default_factory=list)  # (scenario id, outcome)
    schedules: list[list[dict[str, Any]]] = field(default_factory=list)
    violated: dict[str, list[str]] = field(default_factory=dict)  # scenario id -> what it broke

    @property
    def violations(self) -> list[str]:
        return [scenario for scenario, _ in self.outcomes if self.violated.get(scenario)]

    @property
    def inconclusive(self) -> list[str]:
        return [scenario for scenario, outcome in self.outcomes
                if outcome != PASSED and not self.violated.get(scenario)]

    def to_dict(self) -> dict[str, Any]:
        cells = coverage(self.schedules)
        return {
            "seed": self.seed,
            "rounds": [{"scenario": scenario, "outcome": outcome, "violated": self.violated.get(scenario, []),
                        "schedule": schedule}
                       for (scenario, outcome), schedule in zip(self.outcomes, self.schedules, strict=True)],
            "coverage": [dataclasses.asdict(c) for c in cells],
            "kinds_not_exercised": kinds_not_exercised(cells, self.kinds),
        }


def space_for(base: ScenarioSpec, chaos: ChaosRun, options: ExploreOptions) -> Space:
    """The space rounds are drawn from: the topology's nodes (the migrating one's, its
    faults anchored to phases, during a migration), the base topic's shape."""
    topic = base.topic
    try:
        if options.during:
            return Space.of(chaos.migrating_topology(base.broker_settings), topic.partition_count,
                            topic.replicas, kinds=options.kinds, max_concurrent=options.max_concurrent,
                            phases=MIGRATION_PHASES)
        return Space.of(chaos.topology, topic.partition_count, topic.replicas, kinds=options.kinds,
                        max_concurrent=options.max_concurrent)
    except ValueError as err:
        raise ScenarioFileError(f"explore: {err}") from err


def round_migration(base: ScenarioSpec, options: ExploreOptions) -> MigrationSpec | None:
    """The migration a round walks: the base file's ``[migration]`` if it has one, else
    a forward walk holding dual-write ROUND_HOLD_S; None when not exploring during one."""
    if not options.during:
        return None
    return base.migration or MigrationSpec(hold_s=ROUND_HOLD_S)


def explore(chaos: ChaosRun, base: ScenarioSpec, options: ExploreOptions, progress: Progress,
            clock: Callable[[], float] = time.monotonic) -> Exploration:
    """Run rounds until ``options`` says stop; each round is one record of ``chaos``."""
    space = space_for(base, chaos, options)
    migration = round_migration(base, options)
    chaos.use_cluster_for(bool(migration), base.broker_settings)
    exploration = Exploration(options.seed, space.drawn_kinds)
    in_turn = KindsInTurn(space, options.seed)
    started = clock()
    number = 0
    while True:
        if options.rounds is not None and number >= options.rounds:
            break
        if options.minutes is not None and clock() - started >= options.minutes * 60:
            break
        if options.until_violation and exploration.violations:
            break
        seed = round_seed(options.seed, number)
        schedule = draw_schedule(space, seed, kinds=in_turn.kinds_of(planned_entries(space, seed)))
        drawn = round_spec(base, schedule, options.seed, number, chaos.topology.broker_settings)
        spec = dataclasses.replace(drawn, migration=migration)
        faults = "; ".join(f"{e['fault']} {_when(e)} for {e['duration_s']:g} s" for e in schedule)
        progress(f"round {number}: {len(schedule)} fault(s): {faults}")
        def ticker(run: ScenarioRun, n: int = number) -> LiveProgress:
            return LiveProgress(n, run, lambda: len(exploration.violations), progress)

        broke: set[str] = set()
        record = chaos.run_case(f"explore:{options.seed}:{number}", "explore-round",
                                _body(chaos, spec, ticker, broke), scenario=spec.id)
        chaos.done_with(bool(migration))
        exploration.outcomes.append((spec.id, record.outcome))
        exploration.schedules.append([dict(e) for e in schedule])
        exploration.violated[spec.id] = sorted(broke)
        what = f" ({', '.join(sorted(broke))})" if broke else ""
        if not broke and record.outcome != PASSED:
            what = " (not judged as drawn)"
        progress(f"round {number}: {record.outcome.upper()}{what}; violations so far: "
                 f"{len(exploration.violations)} of {number + 1} round(s)")
        number += 1
    return exploration


def _when(entry: dict[str, Any]) -> str:
    """When an entry strikes, as the console says it: at a time, or as a phase begins."""
    phase = (entry.get("when") or {}).get("migration_phase")
    return f"as {phase} begins" if phase else f"at {entry['start_s']:g} s"


def _body(chaos: ChaosRun, spec: ScenarioSpec, ticker: Callable[[ScenarioRun], LiveProgress],
          broke: set[str]) -> Callable[[Cluster], str | None]:
    """The round as a run_case body; what it violated is added to ``broke``."""
    def run(cluster: Cluster) -> str | None:
        live: list[LiveProgress] = []

        def start(s: ScenarioSpec) -> ScenarioRun:
            scenario = ScenarioRun(cluster, s, chaos.directory, chaos.judge, scenario_id=s.id)
            live.append(ticker(scenario).begin())
            return scenario

        try:
            run = run_spec(spec, start)
        finally:
            for progress in live:
                progress.end()
        broke.update(violations(run))
        return None if run.passed else "\n".join(run.failures())
    return run


def load_base(path: str | Path, chaos: ChaosRun, during: str | None = None) -> ScenarioSpec:
    """The safety configuration: a scenario file's topic, clients and settings (its own
    schedule, checks and expectations are not used), checked against the topology: the
    migrating one, on a release that migrates, when exploring ``during`` a migration."""
    from harness.cluster.versions import check_migration, release
    from harness.scenario.file_format import check_runnable, load_scenario_file

    scenario = load_scenario_file(path)
    if not scenario.spec.producers:
        raise ScenarioFileError(f"{path}: an exploration needs at least one producer")
    topology = chaos.topology
    if during:
        check_migration(release(chaos.kafka_version))
        topology = chaos.migrating_topology(scenario.broker_settings)
    elif scenario.spec.migration:
        raise ScenarioFileError(f"{path}: [migration]: the file walks a migration; explore it with "
                                "--during migration")
    check_runnable(scenario, topology, release(chaos.kafka_version).extra_broker_settings)
    return scenario.spec


def _relative(folder: Path) -> Path:
    """``folder`` as the user can type it from here: relative when it is below the cwd."""
    try:
        return folder.relative_to(Path.cwd())
    except ValueError:
        return folder


def write_exploration(exploration: Exploration, folder: Path) -> Path:
    """explore.json in the run's folder: every round's schedule and outcome, and coverage."""
    import json

    path = folder / "explore.json"
    path.write_text(json.dumps(exploration.to_dict(), indent=1))
    return path


def summary_lines(exploration: Exploration, folder: Path, cluster_flags: str = "") -> Sequence[str]:
    """What an exploration found, with the commands that replay and shrink each violating
    round of the run folder ``folder``, ready to paste; ``cluster_flags`` (the
    exploration's own release, topology and mode) go with them, so they run on the same
    kind of cluster."""
    lines = [f"explored {len(exploration.outcomes)} round(s) from seed {exploration.seed}: "
             f"{len(exploration.violations)} violated, {len(exploration.inconclusive)} could not be judged "
             "as drawn"]
    shown = _relative(folder)
    flags = f" {cluster_flags}" if cluster_flags else ""
    lines += [f"  {scenario} broke {', '.join(exploration.violated[scenario])}: kafka-chaos replay "
              f"{shown / scenario}{flags}; kafka-chaos shrink {shown / scenario / 'scenario.toml'}{flags}"
              for scenario in exploration.violations]
    cells = coverage(exploration.schedules)
    lines.append("coverage (fault x target named, entries, seconds in force):")
    lines += [f"  {line}" for line in table(cells)]
    missing = kinds_not_exercised(cells, exploration.kinds)
    lines.append(f"fault kinds not exercised: {', '.join(missing) if missing else 'none'}")
    return lines
