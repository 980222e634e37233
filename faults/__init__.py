"""Fault injectors for kafka-chaos: processes, links, zones and ZooKeeper.

Each fault is a small object with ``inject(cluster, log)`` and an idempotent
``heal(cluster, log)``, aimed at roles (:mod:`faults.targets`) resolved from the live
cluster when it strikes, and recorded as events (:mod:`faults.events`). Faults are
built in code or from spec dicts (:mod:`faults.registry`), run on a timeline beside a
workload (:mod:`faults.schedule`), and all undone by one call (:func:`heal_all`).
"""

from faults.base import Fault, active_faults, struck_kinds
from faults.config import TopicConfig
from faults.disk import FillDisk
from faults.errors import FaultError, FaultSpecError, FaultTimeout, ScheduleError, TargetError
from faults.events import EventLog, FaultEvent
from faults.heal import heal_all
from faults.network import (
    Cut,
    CutMode,
    Degrade,
    cut_between,
    cut_link,
    isolate,
    isolate_controller,
    isolate_node,
    isolate_zone,
)
from faults.power import PowerLoss
from faults.process import Bounce, ControlledShutdown, Kill, Pause, Restart
from faults.registry import build_fault, fault_kinds
from faults.schedule import Schedule, ScheduleEntry, ScheduleRun
from faults.targets import (
    BrokerId,
    Controller,
    CoordinatorOf,
    FollowerOf,
    Isolation,
    LeaderOf,
    Links,
    Node,
    Target,
    TxnCoordinatorOf,
    Zone,
    ZoneClients,
    ZoneOf,
    ZooKeeperLeader,
    parse_links,
    parse_target,
)
from faults.zookeeper import DeleteController, ExpireSession, PreferredLeaderElection, Reassign

__all__ = [
    "Bounce",
    "BrokerId",
    "ControlledShutdown",
    "Controller",
    "CoordinatorOf",
    "Cut",
    "CutMode",
    "Degrade",
    "DeleteController",
    "EventLog",
    "ExpireSession",
    "Fault",
    "FaultError",
    "FaultEvent",
    "FaultSpecError",
    "FaultTimeout",
    "FillDisk",
    "FollowerOf",
    "Isolation",
    "Kill",
    "LeaderOf",
    "Links",
    "Node",
    "Pause",
    "PowerLoss",
    "PreferredLeaderElection",
    "Reassign",
    "Restart",
    "Schedule",
    "ScheduleEntry",
    "ScheduleError",
    "ScheduleRun",
    "Target",
    "TargetError",
    "TopicConfig",
    "TxnCoordinatorOf",
    "Zone",
    "ZoneClients",
    "ZoneOf",
    "ZooKeeperLeader",
    "active_faults",
    "build_fault",
    "cut_between",
    "cut_link",
    "fault_kinds",
    "heal_all",
    "isolate",
    "isolate_controller",
    "isolate_node",
    "isolate_zone",
    "parse_links",
    "parse_target",
    "struck_kinds",
]
