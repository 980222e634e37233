"""Reaching a Docker engine, and starting one where this project may.

kafka-chaos uses whatever engine ``docker info`` reaches (Docker Desktop, a CI runner's
daemon, a remote DOCKER_HOST). Only on a Debian host where we are root and nothing
answers do we install Debian's ``docker.io`` and start ``dockerd`` in the background:
that is the situation of a fresh CI machine, and doing it there keeps the README's
commands self-sufficient. Anywhere else a missing engine is one clear error.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import docker
from docker.errors import DockerException
from testcontainers.core.config import testcontainers_config

from harness.cluster.waiting import wait_for_answer
from harness.errors import EngineUnavailable, describe_error

DOCKERD_LOG = Path("/var/log/kafka-chaos-dockerd.log")
START_TIMEOUT_S = 60.0


def _answering() -> docker.DockerClient:
    """A client of the engine, once it answered a ping; DockerException while none does."""
    client = docker.from_env(timeout=120)
    client.ping()
    return client


def _ping() -> docker.DockerClient | None:
    try:
        return _answering()
    except DockerException:
        return None


def _is_debian_root() -> bool:
    return (
        sys.platform.startswith("linux")
        and os.geteuid() == 0
        and Path("/etc/debian_version").exists()
        and "DOCKER_HOST" not in os.environ
    )


def _install_docker_io() -> None:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "docker.io"]):
        result = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["?"]
            raise EngineUnavailable(f"installing docker.io failed: {' '.join(cmd)}: {tail[0]}")


def _start_dockerd() -> None:
    log = DOCKERD_LOG.open("ab")
    # start_new_session detaches dockerd from our process group so that Ctrl-C in a
    # test session does not take the engine down with it.
    subprocess.Popen(
        ["dockerd"], stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True
    )


def use_own_reaper() -> None:
    """Tell testcontainers not to start its reaper (Ryuk), whose image no local build
    provides: the harness removes what it starts by the run's labels
    (``harness.cluster.resources``). Called when a cluster starts, not at import, so
    importing the harness changes nothing in the importing process."""
    testcontainers_config.ryuk_disabled = True


def ensure_engine(start_if_missing: bool = True) -> docker.DockerClient:
    """Return a client for a live engine, starting dockerd on a Debian root host."""
    client = _ping()
    if client is not None:
        return client
    if not start_if_missing or not _is_debian_root():
        raise EngineUnavailable(
            "no Docker engine answers (docker info fails); start Docker (Docker Desktop, "
            "or dockerd) and try again"
        )
    if shutil.which("dockerd") is None:
        _install_docker_io()
    _start_dockerd()
    try:
        return wait_for_answer(_answering, START_TIMEOUT_S, "the dockerd just started to answer",
                               transient=(DockerException,), interval_s=0.5)
    except DockerException as err:
        raise EngineUnavailable(
            f"dockerd was started but did not answer within {START_TIMEOUT_S:.0f} s "
            f"(last: {describe_error(err)}); see {DOCKERD_LOG}"
        ) from err


def engine_available() -> bool:
    """True when an engine answers now; never starts one (used to decide skips)."""
    return _ping() is not None


def main() -> int:
    """``python -m harness.cluster.engine``: make sure an engine runs, for setup scripts."""
    try:
        client = ensure_engine()
    except EngineUnavailable as err:
        print(f"kafka-chaos: {err}", file=sys.stderr)
        return 2
    print(f"Docker engine {client.version().get('Version', '?')} is running")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
