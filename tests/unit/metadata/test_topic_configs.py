import pytest

from metadata.topic_configs import (
    TOPIC_CONFIGS,
    ConfigValidationError,
    broker_synonyms,
    effective_topic_config,
    parse_topic_config,
)


def test_defaults_match_kafka() -> None:
    config = effective_topic_config({})
    assert config["segment.bytes"] == 1073741824
    assert config["max.message.bytes"] == 1048588
    assert config["retention.ms"] == 604800000
    assert config["cleanup.policy"] == ["delete"]
    assert config["min.cleanable.dirty.ratio"] == 0.5
    assert config["unclean.leader.election.enable"] is False
    assert config["segment.index.bytes"] == 10485760


def test_parse_validates_and_names_the_key() -> None:
    assert parse_topic_config("cleanup.policy", "compact, delete") == ["compact", "delete"]
    assert parse_topic_config("preallocate", "TRUE") is True
    with pytest.raises(ConfigValidationError, match="segment.bytes"):
        parse_topic_config("segment.bytes", "13")
    with pytest.raises(ConfigValidationError, match="segment.bytes"):
        parse_topic_config("segment.bytes", "abc")
    with pytest.raises(ConfigValidationError, match="cleanup.policy"):
        parse_topic_config("cleanup.policy", "compact,shred")
    with pytest.raises(ConfigValidationError, match="no.such.config"):
        parse_topic_config("no.such.config", "1")
    with pytest.raises(ConfigValidationError, match="message.timestamp.type"):
        parse_topic_config("message.timestamp.type", "Whenever")


def test_broker_synonyms_convert_units_and_rank_ms_first() -> None:
    assert effective_topic_config({}, {"log.retention.hours": "1"})["retention.ms"] == 3_600_000
    assert effective_topic_config({}, {"log.retention.minutes": "2", "log.retention.hours": "1"})["retention.ms"] == 120_000
    assert effective_topic_config({}, {"log.retention.ms": "5", "log.retention.hours": "1"})["retention.ms"] == 5
    assert effective_topic_config({}, {"log.roll.hours": "2"})["segment.ms"] == 7_200_000
    assert effective_topic_config({}, {"log.segment.bytes": "1000"})["segment.bytes"] == 1000
    assert broker_synonyms("retention.ms")[0] == "log.retention.ms"


def test_override_beats_broker_default() -> None:
    config = effective_topic_config({"segment.bytes": "2000"}, {"log.segment.bytes": "1000", "unrelated.key": "x"})
    assert config["segment.bytes"] == 2000


def test_every_config_has_a_valid_default() -> None:
    for definition in TOPIC_CONFIGS.values():
        definition.validate(definition.default)
