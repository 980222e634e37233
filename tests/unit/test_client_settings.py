"""Scenario settings into each client's own names: passed through for librdkafka, mapped
or refused in one sentence for the Java client."""

from __future__ import annotations

import pytest

from harness.workload.client_settings import (
    CONSUMER,
    JAVA,
    JAVA_DEFAULTS,
    JAVA_LACKS,
    JAVA_NAMES,
    LIBRDKAFKA,
    PRODUCER,
    UnknownSetting,
    java_config,
    own_settings,
)


def test_librdkafka_takes_the_scenario_names_as_they_are() -> None:
    settings = {"message.timeout.ms": 30000, "socket.timeout.ms": 5000, "enable.idempotence": True}
    assert own_settings(LIBRDKAFKA, PRODUCER, settings, "producer pa") == settings


def test_the_java_client_gets_its_own_names_and_values_as_properties() -> None:
    own = own_settings(JAVA, PRODUCER, {"message.timeout.ms": 30000, "enable.idempotence": True,
                                        "acks": "all"}, "producer pa")
    assert own == {"delivery.timeout.ms": "30000", "enable.idempotence": "true", "acks": "all"}
    assert own_settings(JAVA, CONSUMER, {"fetch.wait.max.ms": 100}, "consumer ca") \
        == {"fetch.max.wait.ms": "100"}


@pytest.mark.parametrize(("role", "key", "nearest"), [
    (PRODUCER, "socket.timeout.ms", "request.timeout.ms"),
    (PRODUCER, "topic.metadata.refresh.interval.ms", "metadata.max.age.ms"),
    (CONSUMER, "enable.partition.eof", "end-of-partition"),
])
def test_a_setting_the_java_client_lacks_is_one_sentence_with_its_nearest(role: str, key: str,
                                                                         nearest: str) -> None:
    with pytest.raises(UnknownSetting) as raised:
        own_settings(JAVA, role, {key: 1}, f"{role} x")
    text = str(raised.value)
    assert text.startswith(f"{role} x: the Java client has no setting '{key}'") and nearest in text
    assert "\n" not in text


def test_a_setting_nobody_mapped_is_refused_naming_what_is() -> None:
    with pytest.raises(UnknownSetting, match=r"producer pa: setting 'acks.typo' is not mapped to the Java "
                                             r"producer; mapped: acks, batch.size"):
        own_settings(JAVA, PRODUCER, {"acks.typo": 1}, "producer pa")


def test_two_names_for_one_java_setting_must_agree() -> None:
    assert own_settings(JAVA, PRODUCER, {"message.timeout.ms": 9000, "delivery.timeout.ms": 9000}, "p") \
        == {"delivery.timeout.ms": "9000"}
    with pytest.raises(UnknownSetting, match=r"both set the Java client's 'delivery\.timeout\.ms'"):
        own_settings(JAVA, PRODUCER, {"message.timeout.ms": 9000, "delivery.timeout.ms": 8000}, "p")


def test_an_unknown_client_is_refused() -> None:
    with pytest.raises(UnknownSetting, match="producer pa: unknown client 'jvm'; clients: librdkafka, java"):
        own_settings("jvm", PRODUCER, {}, "producer pa")


def test_java_config_lays_the_scenario_over_the_defaults() -> None:
    config = java_config(CONSUMER, {"isolation.level": "read_uncommitted"}, "consumer ca")
    assert config["isolation.level"] == "read_uncommitted"
    assert config["auto.offset.reset"] == "earliest"
    assert java_config(CONSUMER, {}, "c")["isolation.level"] == "read_committed"  # as librdkafka's default


def test_java_config_refuses_a_delivery_timeout_shorter_than_linger_plus_a_request() -> None:
    with pytest.raises(UnknownSetting, match=r"delivery.timeout.ms \(message.timeout.ms\) 15000 must be at "
                                             r"least linger.ms \+ request.timeout.ms \(30005\)"):
        java_config(PRODUCER, {"request.timeout.ms": 30000}, "producer pa")
    with pytest.raises(UnknownSetting, match=r"linger\.ms must be a whole number of milliseconds, "
                                             r"not '5\.5'"):
        java_config(PRODUCER, {"linger.ms": 5.5}, "producer pa")


def test_the_tables_are_consistent() -> None:
    for role in (PRODUCER, CONSUMER):
        assert not set(JAVA_NAMES[role]) & set(JAVA_LACKS)  # a name is mapped or lacking, never both
        assert set(JAVA_DEFAULTS[role]) <= set(JAVA_NAMES[role].values())  # defaults in own names
