"""A node's data directory as a disk the harness can inspect and cut while the node is down.

Why volumes: a power loss (``faults.power``) must change a dead node's files before it
starts again, and a stopped container runs no command. So each broker's and ZooKeeper
node's data directory lives on a named volume of its own, labelled with the run like
every other resource (removed with the run, reaped after a killed one). While the node
is down, a short-lived helper container of the same image mounts that volume, with no
network, to list the files or apply a cut with coreutils (``truncate``, ``rm``). The
node's sync journal (``node_config.SYNC_JOURNAL``) stays in the node's own filesystem,
outside the data directory, and is read through Docker's archive API, which works on a
stopped container.

A topology with ``broker_disk_mb`` gives each broker a disk of that size: a tmpfs volume
(the local driver mounts it, no privileged container needed; memory is used only as it
is written). A tmpfs lives only while some container has it mounted, so a holder
container of the run (``sleep``, no network) keeps it mounted across the broker's kill
and restart. Filling the disk is a helper writing one file until the disk is full;
freeing it removes that file.
"""

from __future__ import annotations

import io
import shlex
import tarfile
from collections.abc import Mapping

import docker
from docker.models.containers import Container

from harness.cluster.node_config import SYNC_JOURNAL
from harness.cluster.resources import RunIdentity
from harness.errors import ChaosError

HELPER_TIMEOUT_S = 60
FILL_FILE = ".kafka-chaos-fill"  # what fill_disk writes in a broker's log directory


class NodeDisks:
    """The data volumes of one run's nodes."""

    def __init__(self, identity: RunIdentity) -> None:
        self.identity = identity

    def volume_name(self, node: str) -> str:
        return f"{self.identity.resource_name(node)}-data"

    def create_volume(self, client: docker.DockerClient, node: str, image: str,
                      size_mb: int | None = None) -> str:
        """A new, empty data volume for the node, labelled with the run; of ``size_mb``
        (a tmpfs, with its holder) when given. One already there would hand the node
        another cluster's data: refused."""
        name = self.volume_name(node)
        try:
            client.volumes.get(name)
        except docker.errors.NotFound:
            pass
        else:
            raise ChaosError(f"volume {name} is left from an earlier run with this run id; "
                             "remove it (kafka-chaos clean) or choose another run id")
        if size_mb is None:
            client.volumes.create(name, labels=self.identity.labels("data"))
            return name
        client.volumes.create(name, driver="local", labels=self.identity.labels("data"),
                              driver_opts={"type": "tmpfs", "device": "tmpfs", "o": f"size={int(size_mb)}m"})
        client.containers.run(image, ["sleep", "infinity"], detach=True, network_mode="none",
                              name=f"{self.identity.resource_name(node)}-disk",
                              volumes={name: {"bind": "/disk", "mode": "ro"}},
                              labels=self.identity.labels("disk-holder"))
        return name

    def journal(self, container: Container) -> list[str]:
        """The node's sync journal, line by line with their newlines (running or stopped);
        empty when the node never journalled."""
        try:
            stream, _ = container.get_archive(SYNC_JOURNAL)
        except docker.errors.NotFound:
            return []
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            member = tar.next()
            extracted = tar.extractfile(member) if member is not None else None
            text = extracted.read().decode() if extracted is not None else ""
        return text.splitlines(keepends=True)

    def files(self, client: docker.DockerClient, image: str, node: str, data_dir: str) -> dict[str, int]:
        """Every file under the node's data directory and its size, read from its volume."""
        listing = f"find {shlex.quote(data_dir)} -type f -printf '%s %p\\n'"
        out = self._helper(client, image, node, data_dir, listing)
        files: dict[str, int] = {}
        for line in out.splitlines():
            size, _, path = line.partition(" ")
            files[path] = int(size)
        return files

    def cut(self, client: docker.DockerClient, image: str, node: str, data_dir: str,
            sizes: Mapping[str, int | None]) -> None:
        """Cut each file to its size, or remove it (None), on the node's volume."""
        if not sizes:
            return
        lines = ["set -e"]
        for path, size in sorted(sizes.items()):
            if not path.startswith(data_dir.rstrip("/") + "/"):
                raise ChaosError(f"refusing to cut {path!r}: not under {data_dir}")
            quoted = shlex.quote(path)
            lines.append(f"rm -f -- {quoted}" if size is None else f"truncate -s {int(size)} -- {quoted}")
        self._helper(client, image, node, data_dir, "\n".join(lines))

    def fill(self, client: docker.DockerClient, image: str, node: str, data_dir: str) -> tuple[int, int]:
        """Write one file into the node's data directory until its disk is full; the
        bytes written and the bytes left free (0 when the disk filled)."""
        fill = shlex.quote(_fill_path(data_dir))
        quoted = shlex.quote(data_dir)
        out = self._helper(client, image, node, data_dir,
                           f"dd if=/dev/zero of={fill} bs=1M 2>/dev/null || true\n"
                           f"stat -c %s {fill}\ndf -B1 --output=avail {quoted} | tail -n 1")
        written, free = (int(v) for v in out.split())
        return written, free

    def free(self, client: docker.DockerClient, image: str, node: str, data_dir: str) -> None:
        """Remove what :meth:`fill` wrote."""
        self._helper(client, image, node, data_dir, f"rm -f -- {shlex.quote(_fill_path(data_dir))}")

    def _helper(self, client: docker.DockerClient, image: str, node: str, data_dir: str, script: str) -> str:
        """Run ``script`` in a helper container with the node's volume at ``data_dir``; its
        output. The script travels as a file, so no command line gets too long."""
        helper = client.containers.create(
            image, ["sh", "/disk-helper.sh"], network_mode="none",
            volumes={self.volume_name(node): {"bind": data_dir, "mode": "rw"}},
            labels=self.identity.labels("disk-helper"),
        )
        try:
            payload = io.BytesIO()
            with tarfile.open(fileobj=payload, mode="w") as tar:
                data = script.encode()
                info = tarfile.TarInfo("disk-helper.sh")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            helper.put_archive("/", payload.getvalue())
            helper.start()
            status = helper.wait(timeout=HELPER_TIMEOUT_S)
            if status.get("StatusCode") != 0:
                said = helper.logs(stdout=True, stderr=True).decode(errors="replace").strip()
                raise ChaosError(f"the disk helper for {node} failed ({status}): {said[-500:]}")
            return str(helper.logs(stdout=True, stderr=False).decode(errors="replace"))
        finally:
            helper.remove(force=True)


def _fill_path(data_dir: str) -> str:
    return f"{data_dir.rstrip('/')}/{FILL_FILE}"
