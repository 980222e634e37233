"""The session password ZooKeeper derives, reproduced bit for bit from java.util.Random."""

from faults.zksession import JavaRandom, session_password


def test_java_random_matches_known_java_outputs() -> None:
    # new Random(42).nextInt() and new Random(0).nextInt(), as printed by a JVM.
    assert JavaRandom(42).next_int() == -1170105035
    assert JavaRandom(0).next_int() == -1155484576


def test_next_bytes_takes_ints_little_end_first_and_discards_the_rest() -> None:
    first = JavaRandom(42).next_int() & 0xFFFFFFFF
    assert JavaRandom(42).next_bytes(3) == first.to_bytes(4, "little")[:3]
    assert len(JavaRandom(7).next_bytes(16)) == 16


def test_session_passwords_are_sixteen_bytes_and_depend_on_the_session_only() -> None:
    session = 0x100004B2D9A0003
    assert len(session_password(session)) == 16
    assert session_password(session) == session_password(session)
    assert session_password(session) != session_password(session + 1)
