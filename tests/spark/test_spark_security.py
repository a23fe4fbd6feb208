"""The source and the sink on a SASL_SSL listener with ACLs, through Spark's Kafka options
(kafka.security.protocol, kafka.sasl.mechanism, kafka.sasl.jaas.config, kafka.ssl.*).

One node: a PLAINTEXT listener whose User:ANONYMOUS is the super user (the tests' own set-up
and checks) and a SASL_SSL listener (a trustme CA; PLAIN users alice and bob, SCRAM-SHA-512
user carol). alice may read one topic and describe another, carol may write two, bob may do nothing."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterator

import pytest
import trustme
from pyspark.sql import SparkSession

from cluster.testing.waiting import wait_for
from clients.admin import BlockingAdmin
from clients.admin.acl_operations import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    ResourcePattern,
)
from clients.protocol.acl_types import AclOperation, AclPermissionType, ResourceType
from tests.compat.sasl_cluster import SaslCluster, sasl_cluster
from tests.spark.helpers import produce

pytestmark = pytest.mark.slow

PLAIN_USERS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
               'user_alice="alice-secret" user_bob="bob-secret";')
CAROL = ("carol", "carol-secret")
GRANTED, DENIED, DESCRIBED = "granted", "denied", "described"
WRITTEN, STREAMED = "written", "streamed"
RECORDS = 50


def jaas(module: str, username: str, password: str) -> str:
    return (f"org.apache.kafka.common.security.{module} required "
            f'username="{username}" password="{password}";')


def alice(password: str = "alice-secret") -> dict[str, str]:
    return {"kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.jaas.config": jaas("plain.PlainLoginModule", "alice", password)}


def bob() -> dict[str, str]:
    return {"kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.jaas.config": jaas("plain.PlainLoginModule", "bob", "bob-secret")}


def carol(password: str | None = None) -> dict[str, str]:
    user, secret = CAROL
    return {"kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": jaas("scram.ScramLoginModule", user, password or secret)}


@pytest.fixture(scope="module")
def ca_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    directory = tmp_path_factory.mktemp("spark-sasl-ssl")
    ca = trustme.CA()
    ca_path, server_path = directory / "ca.pem", directory / "server.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(
        str(server_path))
    return ca_path, server_path


def grant(principal: str, resource: ResourceType, name: str,
          *operations: AclOperation) -> list[AclBinding]:
    return [AclBinding(ResourcePattern(resource, name),
                       AccessControlEntry(principal, "*", operation, AclPermissionType.ALLOW))
            for operation in operations]


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory,
            ca_file: tuple[Path, Path]) -> Iterator[SaslCluster]:
    overrides = {
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,"
                                          "SASL_PLAINTEXT:SASL_SSL",
        "listener.name.sasl_plaintext.ssl.keystore.location": str(ca_file[1]),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS",
    }
    with sasl_cluster(tmp_path_factory.mktemp("secured"), PLAIN_USERS,
                      ["--add-scram", f"SCRAM-SHA-512=[name={CAROL[0]},password={CAROL[1]}]"],
                      overrides) as started:
        for topic in (GRANTED, DENIED, DESCRIBED, WRITTEN, STREAMED):
            started.create_topic(topic, partitions=2)
        for topic in (GRANTED, DENIED, DESCRIBED):
            produce(started, topic, [{"value": b"%s-%d" % (topic.encode(), i)}
                                     for i in range(RECORDS)])
        bindings = (grant("User:alice", ResourceType.TOPIC, GRANTED, AclOperation.READ,
                          AclOperation.DESCRIBE)
                    + grant("User:alice", ResourceType.TOPIC, DESCRIBED, AclOperation.DESCRIBE)
                    + grant("User:carol", ResourceType.TOPIC, WRITTEN, AclOperation.WRITE,
                            AclOperation.DESCRIBE)
                    + grant("User:carol", ResourceType.TOPIC, STREAMED, AclOperation.WRITE,
                            AclOperation.DESCRIBE))
        with BlockingAdmin({"bootstrap.servers": started.bootstrap}) as admin:
            admin.create_acls(bindings)
            wait_for(lambda: len(admin.describe_acls(AclBindingFilter())) == len(bindings),
                     "the ACLs in place", 30)
        yield started


def secured_options(cluster: SaslCluster, ca: Path, user: dict[str, str],
                    **options: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": cluster.sasl_bootstrap,
            "kafka.security.protocol": "SASL_SSL", "kafka.ssl.truststore.type": "PEM",
            "kafka.ssl.truststore.location": str(ca), **user, **options}


def values(spark: SparkSession, cluster: SaslCluster, topic: str) -> list[bytes]:
    """What ``topic`` holds, read as the super user on the PLAINTEXT listener."""
    rows = (spark.read.format("raftka")
            .options(**{"kafka.bootstrap.servers": cluster.bootstrap, "subscribe": topic})
            .load().select("value").collect())
    return sorted(bytes(r.value) for r in rows)


def test_batch_read_of_a_granted_topic(spark: SparkSession, secured: SaslCluster,
                                       ca_file: tuple[Path, Path]) -> None:
    rows = (spark.read.format("raftka")
            .options(**secured_options(secured, ca_file[0], alice(), subscribe=GRANTED))
            .load().select("value").collect())
    assert sorted(bytes(r.value) for r in rows) == \
        sorted(b"granted-%d" % i for i in range(RECORDS))


def test_batch_read_of_a_denied_topic_fails_naming_it(spark: SparkSession,
                                                      secured: SaslCluster,
                                                      ca_file: tuple[Path, Path]) -> None:
    reader = spark.read.format("raftka").options(
        **secured_options(secured, ca_file[0], alice(), subscribe=f"{GRANTED},{DENIED}"))
    with pytest.raises(Exception) as caught:
        reader.load().collect()
    assert "TOPIC_AUTHORIZATION_FAILED" in str(caught.value)
    assert f"Not authorized to access topics: [{DENIED}]" in str(caught.value)


def test_reading_a_topic_described_but_not_readable_fails_naming_it(
        spark: SparkSession, secured: SaslCluster, ca_file: tuple[Path, Path]) -> None:
    reader = spark.read.format("raftka").options(
        **secured_options(secured, ca_file[0], alice(), subscribe=DESCRIBED))
    with pytest.raises(Exception) as caught:
        reader.load().collect()
    assert "TOPIC_AUTHORIZATION_FAILED" in str(caught.value)
    assert f"fetch of {DESCRIBED}-" in str(caught.value)


def test_a_wrong_password_fails_fast_with_authentication_failed(
        spark: SparkSession, secured: SaslCluster, ca_file: tuple[Path, Path]) -> None:
    reader = spark.read.format("raftka").options(
        **secured_options(secured, ca_file[0], alice("wrong"), subscribe=GRANTED))
    started = time.monotonic()
    with pytest.raises(Exception) as caught:
        reader.load().collect()
    elapsed = time.monotonic() - started
    assert "authentication failed at" in str(caught.value), str(caught.value)[-2000:]
    assert "(PLAIN as alice)" in str(caught.value), str(caught.value)[-2000:]
    assert elapsed < 30, f"the failure took {elapsed:.1f} s"


def test_a_sink_with_a_wrong_password_fails_fast_with_authentication_failed(
        spark: SparkSession, secured: SaslCluster, ca_file: tuple[Path, Path]) -> None:
    df = spark.createDataFrame([("k", "v")], "key string, value string")
    writer = df.write.format("raftka").options(
        **secured_options(secured, ca_file[0], carol("wrong"), topic=WRITTEN)).mode("append")
    started = time.monotonic()
    with pytest.raises(Exception) as caught:
        writer.save()
    elapsed = time.monotonic() - started
    assert "authentication failed at" in str(caught.value), str(caught.value)[-2000:]
    assert "(SCRAM-SHA-512 as carol)" in str(caught.value), str(caught.value)[-2000:]
    assert elapsed < 30, f"the failure took {elapsed:.1f} s"


def test_sink_writes_as_a_scram_user(spark: SparkSession, secured: SaslCluster,
                                     ca_file: tuple[Path, Path]) -> None:
    df = spark.createDataFrame([(f"k{i}", f"w{i}") for i in range(RECORDS)],
                               "key string, value string")
    df.write.format("raftka").options(
        **secured_options(secured, ca_file[0], carol(), topic=WRITTEN)).mode("append").save()
    assert values(spark, secured, WRITTEN) == sorted(b"w%d" % i for i in range(RECORDS))


def test_sink_write_without_the_acl_fails_naming_the_topic(spark: SparkSession,
                                                           secured: SaslCluster,
                                                           ca_file: tuple[Path, Path]) -> None:
    df = spark.createDataFrame([("v",)], "value string")
    with pytest.raises(Exception) as caught:
        df.write.format("raftka").options(
            **secured_options(secured, ca_file[0], bob(), topic=WRITTEN)).mode("append").save()
    assert "TOPIC_AUTHORIZATION_FAILED" in str(caught.value)
    assert f"topic '{WRITTEN}'" in str(caught.value)


def test_stream_from_a_granted_topic_to_a_written_one(spark: SparkSession,
                                                      secured: SaslCluster,
                                                      ca_file: tuple[Path, Path],
                                                      tmp_path: Path) -> None:
    """Streaming read as alice (PLAIN), streaming write as carol (SCRAM), one query."""
    query = (spark.readStream.format("raftka")
             .options(**secured_options(secured, ca_file[0], alice(), subscribe=GRANTED,
                                        startingOffsets="earliest"))
             .load().selectExpr("key", "upper(CAST(value AS STRING)) AS value")
             .writeStream.format("raftka")
             .options(**secured_options(secured, ca_file[0], carol(), topic=STREAMED))
             .option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(120), "the AvailableNow query did not finish in 120 s"
    assert query.exception() is None, query.exception()
    assert values(spark, secured, STREAMED) == sorted(b"GRANTED-%d" % i
                                                      for i in range(RECORDS))


def test_bad_security_options_fail_naming_the_option(spark: SparkSession,
                                                     secured: SaslCluster,
                                                     ca_file: tuple[Path, Path],
                                                     tmp_path: Path) -> None:
    df = spark.createDataFrame([("v",)], "value string")
    cases: list[tuple[dict[str, Any], str]] = [
        ({"kafka.ssl.truststore.location": str(tmp_path / "missing.pem")},
         "option 'kafka.ssl.truststore.location' is invalid: cannot read"),
        ({"kafka.ssl.truststore.type": "JKS"},
         "option 'kafka.ssl.truststore.type' is invalid: JKS stores are not supported"),
        ({"kafka.sasl.mechanism": "GSSAPI"}, "option 'kafka.sasl.mechanism' must be one of"),
    ]
    for changed, message in cases:
        options = {**secured_options(secured, ca_file[0], carol(), topic=WRITTEN), **changed}
        with pytest.raises(Exception) as caught:
            df.write.format("raftka").options(**options).mode("append").save()
        assert message in str(caught.value)
        options = {**secured_options(secured, ca_file[0], alice(), subscribe=GRANTED),
                   **changed}
        with pytest.raises(Exception) as caught:
            spark.read.format("raftka").options(**options).load().collect()
        assert message in str(caught.value)
