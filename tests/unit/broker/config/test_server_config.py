"""ServerConfig: defaults, typed accessors, validation naming the key at fault."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from broker.config import ConfigError, ConfigSource, Listener, ServerConfig, random_uuid_str

COMBINED = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.1:9094,3@[::1]:9095",
    "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
    "controller.listener.names": "CONTROLLER",
}


def config(**changes: str | None) -> ServerConfig:
    props = dict(COMBINED)
    for key, value in changes.items():
        key = key.replace("_", ".")
        if value is None:
            props.pop(key, None)
        else:
            props[key] = value
    return ServerConfig(props)


def assert_rejected(key: str, **changes: str | None) -> None:
    with pytest.raises(ConfigError) as failure:
        config(**changes)
    assert failure.value.key == key
    assert str(failure.value).startswith(key)


def test_kafka_defaults() -> None:
    c = config()
    assert c.get("socket.request.max.bytes") == 104857600
    assert c.get("connections.max.idle.ms") == 600000
    assert c.get("max.connections") == 2**31 - 1
    assert c.get("broker.heartbeat.interval.ms") == 2000
    assert c.get("broker.session.timeout.ms") == 9000
    assert c.get("offsets.topic.num.partitions") == 50
    assert c.get("offsets.topic.replication.factor") == 3
    assert c.get("group.initial.rebalance.delay.ms") == 3000
    assert c.get("message.max.bytes") == 1048588
    assert c.get("auto.create.topics.enable") is True
    assert c.get("unclean.leader.election.enable") is False
    assert c.log_dirs == ["/tmp/kraft-combined-logs"]
    assert c.metadata_log_dir == "/tmp/kraft-combined-logs"
    assert c.raft_port_offset == 1000
    assert c.socket_request_max_bytes == 104857600


def test_default_listener_is_loopback() -> None:
    c = ServerConfig({"process.roles": "broker", "node.id": "4",
                      "controller.quorum.voters": "1@127.0.0.1:9093"})
    assert c.listeners == [Listener("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT")]
    assert c.inter_broker_listener_name == "PLAINTEXT"


def test_typed_accessors() -> None:
    c = config(log_dirs="/a, /b", metadata_log_dir="/m")
    assert c.node_id == 1
    assert c.process_roles == {"broker", "controller"}
    assert c.is_broker and c.is_controller
    assert c.listener("CONTROLLER") == Listener("CONTROLLER", "127.0.0.1", 9093, "PLAINTEXT")
    assert c.advertised_listeners == [Listener("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT")]
    assert c.voters == {1: ("127.0.0.1", 9093), 2: ("127.0.0.1", 9094), 3: ("::1", 9095)}
    assert c.raft_port_for(2) == 10094
    assert c.raft_address_for(3) == ("::1", 10095)
    assert c.log_dirs == ["/a", "/b"]
    assert c.all_data_dirs == ["/a", "/b", "/m"]


def test_get_and_describe_report_the_source() -> None:
    c = config(num_partitions="6")
    assert c.describe("num.partitions").source == ConfigSource.STATIC_BROKER_CONFIG
    assert c.describe("num.partitions").value == 6
    assert c.describe("min.insync.replicas").source == ConfigSource.DEFAULT_CONFIG
    assert c.originals()["num.partitions"] == "6"
    with pytest.raises(KeyError):
        c.get("no.such.key")


def test_password_is_sensitive() -> None:
    c = config(**{"controller.quorum.password": "s3cret"})
    assert c.describe("controller.quorum.password").is_sensitive
    assert c.quorum_password == "s3cret"


def test_broker_log_defaults_come_from_topic_configs() -> None:
    pytest.importorskip("metadata.topic_configs")
    c = config(**{"log.segment.bytes": "1048576", "log.retention.hours": "1"})
    assert c.get("log.segment.bytes") == 1048576
    assert c.get("log.retention.hours") == 1
    assert c.get("log.cleanup.policy") == ["delete"]
    assert c.log_defaults() == {"log.segment.bytes": "1048576", "log.retention.hours": "1"}
    assert_rejected("log.segment.bytes", **{"log.segment.bytes": "1"})
    assert_rejected("log.cleanup.policy", **{"log.cleanup.policy": "shred"})


def test_unknown_key_warns(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="broker.config"):
        c = config(**{"no.such.thing": "1"})
    assert c.unknown_keys == ["no.such.thing"]
    assert "no.such.thing" in caplog.text


@pytest.mark.parametrize("key, changes", [
    ("process.roles", {"process.roles": None}),
    ("process.roles", {"process.roles": "broker,janitor"}),
    ("node.id", {"node.id": None}),
    ("node.id", {"node.id": "one"}),
    ("node.id", {"node.id": "-1"}),
    ("num.partitions", {"num.partitions": "0"}),
    ("num.partitions", {"num.partitions": "99999999999"}),
    ("auto.create.topics.enable", {"auto.create.topics.enable": "yes"}),
    ("listeners", {"listeners": "PLAINTEXT:/127.0.0.1:9092"}),
    ("listeners", {"listeners": "PLAINTEXT://127.0.0.1:99999,CONTROLLER://127.0.0.1:9093"}),
    ("listeners", {"listeners": "PLAINTEXT://127.0.0.1:9092,plaintext://127.0.0.1:9094,"
                                "CONTROLLER://127.0.0.1:9093"}),
    ("listeners", {"listeners": "PLAINTEXT://127.0.0.1:9092,EXTRA://127.0.0.1:9092,"
                                "CONTROLLER://127.0.0.1:9093",
                   "listener.security.protocol.map":
                       "PLAINTEXT:PLAINTEXT,EXTRA:PLAINTEXT,CONTROLLER:PLAINTEXT"}),
    ("listener.security.protocol.map", {"listener.security.protocol.map": "PLAINTEXT:TLS"}),
    ("listener.security.protocol.map", {"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT"}),
    ("controller.quorum.voters", {"controller.quorum.voters": None}),
    ("controller.quorum.voters", {"controller.quorum.voters": "1@127.0.0.1"}),
    ("controller.quorum.voters", {"controller.quorum.voters": "x@127.0.0.1:9093"}),
    ("controller.quorum.voters", {"controller.quorum.voters": "1@127.0.0.1:1,1@127.0.0.1:2"}),
    ("controller.quorum.voters", {"controller.quorum.voters": "2@127.0.0.1:9093"}),
    ("controller.listener.names", {"controller.listener.names": None}),
    ("controller.listener.names", {"controller.listener.names": "MISSING",
                                   "listener.security.protocol.map":
                                       "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,MISSING:SSL"}),
    ("inter.broker.listener.name", {"inter.broker.listener.name": "CONTROLLER"}),
    ("advertised.listeners", {"advertised.listeners": "OTHER://h:1",
                              "listener.security.protocol.map":
                                  "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,OTHER:SSL"}),
    ("advertised.listeners", {"listeners": "PLAINTEXT://0.0.0.0:9092,"
                                           "CONTROLLER://127.0.0.1:9093"}),
    ("cluster.id", {"cluster.id": "not-a-uuid"}),
    ("raftka.raft.port.offset", {"raftka.raft.port.offset": "60000"}),
    ("metadata.log.max.snapshot.interval", {"metadata.log.max.snapshot.interval": "1"}),
    ("metadata.log.max.snapshot.interval", {"metadata.log.max.snapshot.interval": "often"}),
    ("controller.quorum.password", {"controller.quorum.voters": "1@10.1.2.3:9093"}),
    ("log.cleaner.dedupe.buffer.size", {"log.cleaner.dedupe.buffer.size": "0"}),
    ("log.cleaner.io.buffer.load.factor", {"log.cleaner.io.buffer.load.factor": "1.5"}),
    ("authorizer.class.name", {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}),
    ("super.users", {"super.users": "User:admin;alice"}),
    ("allow.everyone.if.no.acl.found", {"allow.everyone.if.no.acl.found": "maybe"}),
])
def test_bad_values_name_the_key(key: str, changes: dict[str, str | None]) -> None:
    assert_rejected(key, **changes)


def test_snapshot_interval_entries_is_parsed_and_reaches_the_quorum(tmp_path: Path) -> None:
    from broker.node import quorum_config
    from kraft.config import validate

    assert config().get("metadata.log.max.snapshot.interval") == 5000
    c = config(**{"metadata.log.max.snapshot.interval": "250",
                  "metadata.log.max.record.bytes.between.snapshots": "4096",
                  "metadata.log.max.snapshot.interval.ms": "0",
                  "metadata.log.dir": str(tmp_path)})
    assert c.get("metadata.log.max.snapshot.interval") == 250
    quorum = quorum_config(c)
    assert (quorum.snapshot_interval_entries, quorum.snapshot_interval_bytes,
            quorum.snapshot_interval_ms) == (250, 4096, 0)
    # The smallest value the key accepts is one the quorum (and pysyncobj) accepts too.
    smallest = quorum_config(config(**{"metadata.log.max.snapshot.interval": "2"}))
    assert smallest.snapshot_interval_entries == 2
    validate(smallest)
    assert quorum_config(config()).snapshot_interval_entries == 5000


def test_role_specific_listener_rules() -> None:
    with pytest.raises(ConfigError, match="^listeners: a broker-only node"):
        config(**{"process.roles": "broker", "controller.quorum.voters": "2@127.0.0.1:9093"})
    with pytest.raises(ConfigError, match="^listeners: a controller-only node"):
        config(**{"process.roles": "controller"})
    with pytest.raises(ConfigError, match="^controller.quorum.voters: node.id 1 is a voter"):
        config(**{"process.roles": "broker", "listeners": "PLAINTEXT://127.0.0.1:9092"})


def test_remote_voters_with_password_and_advertised_override() -> None:
    c = config(**{"controller.quorum.voters": "1@10.0.0.1:9093",
                  "controller.quorum.password": "pw",
                  "listeners": "PLAINTEXT://0.0.0.0:9092,CONTROLLER://10.0.0.1:9093",
                  "advertised.listeners": "PLAINTEXT://broker1.example:19092"})
    assert c.advertised_listeners == [
        Listener("PLAINTEXT", "broker1.example", 19092, "PLAINTEXT")]


def test_cluster_id_accepted_and_from_file(tmp_path: Path) -> None:
    cluster_id = random_uuid_str()
    path = tmp_path / "server.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in COMBINED.items())
                    + f"cluster.id={cluster_id}\nnum.partitions=2\n")
    c = ServerConfig.from_file(path, overrides={"num.partitions": "5"})
    assert c.cluster_id == cluster_id
    assert c.get("num.partitions") == 5
    with pytest.raises(ConfigError, match="cannot read"):
        ServerConfig.from_file(tmp_path / "missing.properties")


def test_keys_the_node_reads_are_typed_attributes_parsed_once() -> None:
    c = config(**{"replica.lag.time.max.ms": "12000", "broker.rack": "r1",
                  "log.cleaner.io.buffer.load.factor": "0.5",
                  "auto.create.topics.enable": "false"})
    assert c.replica_lag_time_max_ms == 12000 and type(c.replica_lag_time_max_ms) is int
    assert c.broker_rack == "r1"
    assert c.log_cleaner_io_buffer_load_factor == 0.5
    assert c.auto_create_topics_enable is False
    assert config().broker_rack is None
    assert config().offsets_topic_replication_factor == 3
    with pytest.raises(AttributeError):
        getattr(c, "no_such_key_ms")


# --- security protocols: every broker listener protocol is served; a controller listener
# with SASL stops start-up, never served plaintext ------------------------------------------


def test_a_sasl_inter_broker_listener_needs_its_credentials() -> None:
    with pytest.raises(ConfigError) as failure:
        config(listeners="SASL_PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
               inter_broker_listener_name="SASL_PLAINTEXT")
    assert failure.value.key == "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"
    assert config(security_inter_broker_protocol="plaintext").inter_broker_listener_name == \
        "PLAINTEXT"


def test_controller_listeners_are_checked_on_controllers_and_on_brokers_that_reach_them(
        ) -> None:
    mapped = "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"
    with pytest.raises(ConfigError) as failure:
        config(listener_security_protocol_map=mapped)
    assert failure.value.key == "controller.listener.names"
    assert ("controller listener CONTROLLER://127.0.0.1:9093 uses security protocol "
            "SASL_PLAINTEXT") in str(failure.value)
    # A broker-only node does not list the controller listener, but would connect to it.
    with pytest.raises(ConfigError) as failure:
        ServerConfig({"process.roles": "broker", "node.id": "4",
                      "controller.quorum.voters": "1@127.0.0.1:9093",
                      "controller.listener.names": "CONTROLLER",
                      "listener.security.protocol.map": mapped})
    assert failure.value.key == "controller.listener.names"
    assert "controller listener CONTROLLER uses security protocol SASL_PLAINTEXT" in str(
        failure.value)


def test_plaintext_under_any_listener_name_is_accepted() -> None:
    c = config(listeners="INTERNAL://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
               listener_security_protocol_map="INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
               inter_broker_listener_name="INTERNAL")
    assert [l.security_protocol for l in c.listeners] == ["PLAINTEXT", "PLAINTEXT"]
