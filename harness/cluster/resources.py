"""Run identity, the labels every Docker resource carries, and reaping leftovers.

Every container, network and volume a run creates carries ``kafka-chaos.run=<run id>``
and an owner label naming the process that created it (boot id and pid). That is enough
to remove a run's resources by label at its end, on Ctrl-C, after a failing test, and -
for a run that was killed before it could clean up - at the next start, without ever
touching a run that is still alive on the same machine.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, NotFound

from harness.errors import ChaosError

RUN_LABEL = "kafka-chaos.run"
OWNER_LABEL = "kafka-chaos.owner"
KEEP_LABEL = "kafka-chaos.keep"
ROLE_LABEL = "kafka-chaos.role"


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown-boot"


def new_run_id() -> str:
    """Sortable and unique enough for two runs started in the same second."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


@dataclass(frozen=True)
class RunIdentity:
    """Who owns a run's resources."""

    run_id: str
    keep: bool = False

    def __post_init__(self) -> None:
        # The run id names containers and report folders, so it must be a safe name.
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", self.run_id):
            raise ChaosError(
                f"run id {self.run_id!r} must be 1-64 letters, digits, '.', '_' or '-', "
                "starting with a letter or digit"
            )

    def labels(self, role: str) -> dict[str, str]:
        labels = {
            RUN_LABEL: self.run_id,
            OWNER_LABEL: f"{_boot_id()}:{os.getpid()}",
            ROLE_LABEL: role,
        }
        if self.keep:
            labels[KEEP_LABEL] = "true"
        return labels

    def resource_name(self, node: str) -> str:
        return f"kafka-chaos-{self.run_id}-{node}"


def _owner_alive(owner: str) -> bool:
    boot, _, pid = owner.partition(":")
    if boot != _boot_id() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_run(client: docker.DockerClient, run_id: str) -> int:
    """Remove every container, network and volume labelled with ``run_id``.

    Containers go side by side: each force-removal waits for the engine to kill the
    process and delete its file system, which on a loaded machine takes seconds, and
    seven of them one after the other made a Ctrl-C take over a minute."""
    selector = {"label": f"{RUN_LABEL}={run_id}"}
    containers = client.containers.list(all=True, sparse=True, filters=selector)

    def remove(container: Any) -> int:
        try:
            container.remove(force=True, v=True)
            return 1
        except NotFound:
            return 0

    try:
        with ThreadPoolExecutor(max_workers=max(1, len(containers))) as pool:
            removed = sum(pool.map(remove, containers))
    except RuntimeError:
        # At interpreter exit (the atexit net after a second Ctrl-C) no thread can be
        # started ("cannot schedule new futures after interpreter shutdown"): one by one.
        removed = sum(remove(container) for container in containers)
    for network in client.networks.list(filters=selector):
        try:
            network.remove()
            removed += 1
        except (NotFound, APIError):
            pass
    for volume in client.volumes.list(filters=selector):
        try:
            volume.remove(force=True)
            removed += 1
        except (NotFound, APIError):
            pass
    return removed


def stale_runs(client: docker.DockerClient, include_kept: bool = False) -> set[str]:
    """Runs whose owning process is gone (and, unless asked, not kept on purpose)."""
    stale: set[str] = set()
    # sparse listing reads labels from the list itself: a full listing inspects each
    # container afterwards and fails when another run removes one in between.
    resources = [
        *client.containers.list(all=True, sparse=True, filters={"label": RUN_LABEL}),
        *client.networks.list(filters={"label": RUN_LABEL}),
        *client.volumes.list(filters={"label": RUN_LABEL}),
    ]
    for resource in resources:
        labels = resource.attrs.get("Labels") or {}
        run_id = labels.get(RUN_LABEL)
        if not run_id:
            continue
        if labels.get(KEEP_LABEL) == "true" and not include_kept:
            continue
        if not _owner_alive(labels.get(OWNER_LABEL, "")):
            stale.add(run_id)
    return stale


def reap_stale(client: docker.DockerClient, include_kept: bool = False) -> list[str]:
    """Remove the leftovers of runs that were killed; return the run ids reaped."""
    runs = sorted(stale_runs(client, include_kept))
    for run_id in runs:
        remove_run(client, run_id)
    return runs
