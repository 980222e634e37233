"""Expiring a broker's ZooKeeper session from outside the broker, deterministically.

ZooKeeper has no admin command that expires a given session, and Kafka's own tests
expire sessions from inside the broker's JVM (``injectSessionExpiration``), which a
black-box harness cannot do. What ZooKeeper does allow is for any client that knows a
session's id and password to attach to that session and close it: the close is a
quorum transaction, the session's ephemeral nodes are deleted, every server drops the
session's connections, and the owner learns on reconnection that its session has
expired. That is a genuine expiry as the broker sees it, with no network damage.

The id is public (the ``ephemeralOwner`` of ``/brokers/ids/<id>``). The password is not
stored anywhere readable, but the server derives it deterministically:
``new java.util.Random(sessionId ^ 0xB3415C00L).nextBytes(byte[16])``
(``ZooKeeperServer.generatePasswd``, unchanged from ZooKeeper 3.4 through 3.9). This
module reproduces java.util.Random's generator to compute it.
"""

from __future__ import annotations

from kazoo.client import KazooClient

from faults.errors import FaultError

SUPER_SECRET = 0xB3415C00
PASSWORD_BYTES = 16

_MULTIPLIER = 0x5DEECE66D
_ADDEND = 0xB
_MASK = (1 << 48) - 1


class JavaRandom:
    """java.util.Random's 48-bit linear congruential generator, bit for bit."""

    def __init__(self, seed: int) -> None:
        self._seed = (seed ^ _MULTIPLIER) & _MASK

    def _next(self, bits: int) -> int:
        self._seed = (self._seed * _MULTIPLIER + _ADDEND) & _MASK
        value = self._seed >> (48 - bits)
        return value - (1 << bits) if value & (1 << (bits - 1)) else value  # as a Java int

    def next_int(self) -> int:
        return self._next(32)

    def next_bytes(self, count: int) -> bytes:
        out = bytearray()
        while len(out) < count:
            value = self.next_int()
            for _ in range(min(count - len(out), 4)):
                out.append(value & 0xFF)
                value >>= 8
        return bytes(out)


def session_password(session_id: int) -> bytes:
    """The password ZooKeeper issued with ``session_id``."""
    return JavaRandom(session_id ^ SUPER_SECRET).next_bytes(PASSWORD_BYTES)


def close_session(hosts: str, session_id: int, timeout_s: float = 10.0) -> None:
    """Attach to ``session_id`` through ``hosts`` and close it (so the owner finds it expired)."""
    client = KazooClient(hosts=hosts, timeout=timeout_s, client_id=(session_id, session_password(session_id)))
    client.start(timeout=timeout_s)
    try:
        attached = client.client_id[0] if client.client_id else None
        if attached != session_id:
            # ZooKeeper refused the id/password pair and kazoo opened a fresh session.
            raise FaultError(
                f"ZooKeeper did not accept session 0x{session_id:x} (already expired, or a "
                "ZooKeeper release that derives passwords differently)"
            )
    finally:
        client.stop()
        client.close()
