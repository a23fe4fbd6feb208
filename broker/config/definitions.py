"""The server's configuration keys: Kafka's names, types, defaults and valid ranges.

Raftka's own keys (prefixed `raftka.`, plus `controller.quorum.password` and
`metadata.log.max.snapshot.interval`) are marked as such.
Broker-level log defaults (`log.segment.bytes`, ...) come from the topic config table in
`metadata.topic_configs` (see `broker.config.log_defaults`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from broker.config.errors import ConfigError

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1

Validator = Callable[[str, object], None]


@dataclass(frozen=True)
class ConfigKey:
    """One server config: `type` is one of int, long, short, double, boolean, string, list,
    password; `default` is the raw string form (None = no default / null)."""

    name: str
    type: str
    default: str | None
    doc: str
    validator: Validator | None = None
    required: bool = False

    @property
    def is_sensitive(self) -> bool:
        return self.type == "password"


def at_least(minimum: float) -> Validator:
    def check(key: str, value: object) -> None:
        if value is not None and value < minimum:  # type: ignore[operator]
            raise ConfigError(key, f"value {value} is below the minimum {minimum}")
    return check


def between(minimum: float, maximum: float) -> Validator:
    def check(key: str, value: object) -> None:
        if value is not None and not minimum <= value <= maximum:  # type: ignore[operator]
            raise ConfigError(key, f"value {value} is outside [{minimum}, {maximum}]")
    return check


def one_of(*choices: str) -> Validator:
    def check(key: str, value: object) -> None:
        items = value if isinstance(value, list) else [value]
        for item in items:
            if item is not None and item not in choices:
                raise ConfigError(key, f"{item!r} is not one of {', '.join(choices)}")
    return check


_RANGES = {"int": (-(2**31), INT_MAX), "long": (-(2**63), LONG_MAX), "short": (-(2**15), 2**15 - 1)}


def parse_value(key: ConfigKey, raw: str | None) -> object:
    """Parse a raw string as Kafka's ConfigDef would for this key's type, then validate."""
    value: object
    if raw is None:
        value = None
    elif key.type in _RANGES:
        text = raw.strip()
        try:
            value = int(text, 10)
        except ValueError:
            raise ConfigError(key.name, f"expected an integer, got {raw!r}") from None
        low, high = _RANGES[key.type]
        if not low <= value <= high:
            raise ConfigError(key.name, f"{value} does not fit in a {key.type}")
    elif key.type == "double":
        try:
            value = float(raw.strip())
        except ValueError:
            raise ConfigError(key.name, f"expected a number, got {raw!r}") from None
    elif key.type == "boolean":
        text = raw.strip().lower()
        if text not in ("true", "false"):
            raise ConfigError(key.name, f"expected true or false, got {raw!r}")
        value = text == "true"
    elif key.type == "list":
        value = [item.strip() for item in raw.split(",") if item.strip()]
    elif key.type in ("string", "password"):
        value = raw.strip()
    else:  # pragma: no cover - a definition bug, not user input
        raise AssertionError(f"unknown config type {key.type} for {key.name}")
    if key.validator is not None:
        key.validator(key.name, value)
    return value


# Values of authorizer.class.name that enable ACLs (Kafka's KRaft authorizer).
STANDARD_AUTHORIZER_NAMES = ("org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                             "StandardAuthorizer")


def _authorizer_class(key: str, value: object) -> None:
    if value and value not in STANDARD_AUTHORIZER_NAMES:
        raise ConfigError(key, f"{value!r} is not supported; use "
                               f"{STANDARD_AUTHORIZER_NAMES[0]} or leave it empty")


def _principals(key: str, value: object) -> None:
    for part in str(value or "").split(";"):
        principal = part.strip()
        kind, sep, name = principal.partition(":")
        if principal and not (sep and kind and name):
            raise ConfigError(key, f"{principal!r} is not a principal of the form User:<name>")


def _rebalance_protocols(key: str, value: object) -> None:
    one_of("classic", "consumer")(key, value)
    if "classic" not in (value or []):  # type: ignore[operator]
        raise ConfigError(key, "must contain classic")


# Server-side assignors of consumer groups, by name and by Kafka's class names.
CONSUMER_ASSIGNORS = ("uniform", "range",
                      "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
                      "org.apache.kafka.coordinator.group.assignor.RangeAssignor")


def _consumer_assignors(key: str, value: object) -> None:
    if not value:
        raise ConfigError(key, "at least one assignor is required")
    one_of(*CONSUMER_ASSIGNORS)(key, value)


def _idle_ms(key: str, value: object) -> None:
    if value is not None and value != -1 and value < 1:  # type: ignore[operator]
        raise ConfigError(key, f"value {value} must be -1 (never) or at least 1")


def _k(name: str, type_: str, default: str | None, doc: str,
       validator: Validator | None = None, required: bool = False) -> ConfigKey:
    return ConfigKey(name, type_, default, doc, validator, required)


SERVER_KEYS: tuple[ConfigKey, ...] = (
    # Roles and identity.
    _k("process.roles", "list", None, "broker, controller, or broker,controller.",
       one_of("broker", "controller"), required=True),
    _k("node.id", "int", None, "This node's id, unique in the cluster.", at_least(0), required=True),
    _k("cluster.id", "string", None, "Expected cluster id; checked against meta.properties."),
    _k("broker.rack", "string", None, "Rack of this broker, for rack-aware placement."),
    # Quorum.
    _k("controller.quorum.voters", "list", "", "Voters as id@host:port (CONTROLLER listener)."),
    _k("controller.quorum.bootstrap.servers", "list", "", "Accepted for compatibility; unused."),
    _k("controller.listener.names", "list", "", "Listener names used by controllers."),
    _k("controller.quorum.election.timeout.ms", "int", "1000", "Raft election timeout.",
       at_least(1)),
    _k("controller.quorum.fetch.timeout.ms", "int", "2000", "Follower fetch timeout.",
       at_least(1)),
    _k("controller.quorum.request.timeout.ms", "int", "2000", "Controller RPC timeout.",
       at_least(0)),
    _k("controller.quorum.password", "password", None,
       "Raftka: shared secret of the Raft port (pysyncobj encryption). Required whenever a "
       "voter's Raft port listens beyond loopback."),
    _k("raftka.raft.port.offset", "int", "1000",
       "Raftka: a voter's pysyncobj Raft port is its controller.quorum.voters port plus this "
       "offset.", between(1, 65535)),
    # Listeners.
    _k("listeners", "string", "PLAINTEXT://127.0.0.1:9092", "Listeners as NAME://host:port."),
    _k("advertised.listeners", "string", None, "Addresses given to clients; default listeners."),
    _k("raftka.client.bind.address", "string", None,
       "Raftka: local address of every connection this node opens (replica fetchers, the "
       "controller channel, Raft peers); default: the host of the first listener, or none "
       "when that host is a wildcard."),
    _k("listener.security.protocol.map", "string",
       "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
       "Listener name to security protocol."),
    _k("inter.broker.listener.name", "string", None,
       "Listener brokers use among themselves (default: the listener named as "
       "security.inter.broker.protocol)."),
    _k("security.inter.broker.protocol", "string", "PLAINTEXT",
       "Security protocol among brokers (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL); set "
       "this or inter.broker.listener.name, not both."),
    # SASL (Kafka's default mechanism is GSSAPI, which Raftka does not offer; SCRAM needs
    # no password in the config, so it is the default here).
    _k("sasl.enabled.mechanisms", "list", "SCRAM-SHA-256,SCRAM-SHA-512",
       "SASL mechanisms a SASL listener accepts: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512."),
    _k("sasl.mechanism.inter.broker.protocol", "string", "SCRAM-SHA-512",
       "SASL mechanism brokers use among themselves on a SASL inter-broker listener."),
    _k("connection.failed.authentication.delay.ms", "int", "100",
       "How long a connection stays open after failed authentication before it closes.",
       at_least(0)),
    _k("connections.max.reauth.ms", "long", "0",
       "Longest SASL session before the client must re-authenticate (KIP-368); 0: never.",
       at_least(0)),
    # TLS (each may also be given per listener as listener.name.<name>.<key>).
    _k("ssl.keystore.location", "string", None,
       "PEM file with this node's certificate chain and private key."),
    _k("ssl.keystore.type", "string", None,
       "PEM (JKS and PKCS12 are refused); unset: the file must be PEM."),
    _k("ssl.keystore.password", "password", None,
       "Not used with PEM stores (refused when set); see ssl.key.password."),
    _k("ssl.key.password", "password", None, "Password of an encrypted private key."),
    _k("ssl.truststore.location", "string", None,
       "PEM file of CA certificates trusted for peers (default: the system's CAs)."),
    _k("ssl.truststore.type", "string", None, "PEM (JKS and PKCS12 are refused)."),
    _k("ssl.truststore.password", "password", None, "Not used with PEM stores (refused)."),
    _k("ssl.truststore.certificates", "password", None,
       "CA certificates in PEM, inline (besides or instead of ssl.truststore.location)."),
    _k("ssl.keystore.key", "password", None,
       "Inline PEM key: not supported (refused); use ssl.keystore.location."),
    _k("ssl.keystore.certificate.chain", "password", None,
       "Inline PEM chain: not supported (refused); use ssl.keystore.location."),
    _k("ssl.principal.mapping.rules", "string", "DEFAULT",
       "Only DEFAULT: the principal is User:<the certificate's subject>.", one_of("DEFAULT")),
    _k("ssl.client.auth", "string", "none",
       "Client certificates on SSL listeners: none, requested or required.",
       one_of("none", "requested", "required")),
    _k("ssl.enabled.protocols", "list", "TLSv1.2,TLSv1.3", "TLS versions allowed."),
    _k("ssl.protocol", "string", "TLSv1.3", "Accepted for compatibility."),
    _k("ssl.cipher.suites", "list", "", "Cipher suites (IANA or OpenSSL names); empty: the "
       "defaults."),
    _k("ssl.endpoint.identification.algorithm", "string", "https",
       "https: verify the peer's host name when this node connects over SSL; empty: do "
       "not."),
    # Storage.
    _k("log.dirs", "list", None, "Data directories (falls back to log.dir)."),
    _k("log.dir", "string", "/tmp/kraft-combined-logs", "Data directory when log.dirs is unset."),
    _k("metadata.log.dir", "string", None, "Metadata log directory (default: first log dir)."),
    _k("metadata.log.max.record.bytes.between.snapshots", "long", "20971520",
       "Metadata log bytes after which a snapshot is taken.", at_least(1)),
    _k("metadata.log.max.snapshot.interval.ms", "long", "3600000",
       "Longest time between metadata snapshots when the log has new records; 0 disables "
       "time-based snapshots.", at_least(0)),
    # Not a Kafka key (Kafka snapshots by bytes and time only): pysyncobj also compacts by
    # entry count (logCompactionMinEntries, whose default of 5000 and minimum of 2 this keeps).
    _k("metadata.log.max.snapshot.interval", "int", "5000",
       "Raftka: metadata log entries after which a snapshot is taken (besides the byte and "
       "time limits).", at_least(2)),
    _k("log.retention.check.interval.ms", "long", "300000", "Retention check period.",
       at_least(1)),
    _k("log.cleaner.enable", "boolean", "true", "Run the log cleaner (compaction)."),
    _k("log.cleaner.backoff.ms", "long", "15000",
       "Pause of the log cleaner between runs.", at_least(0)),
    _k("log.cleaner.threads", "int", "1",
       "Log cleaner passes run one at a time on the event loop; a static 0 runs no cleaner.",
       at_least(0)),
    _k("log.cleaner.io.max.bytes.per.second", "double", "1.7976931348623157E308",
       "Bytes per second the log cleaner may read.", at_least(0)),
    _k("log.cleaner.dedupe.buffer.size", "long", "134217728",
       "Memory for the cleaner's key map; a pass with more keys cleans up to where it filled.",
       at_least(1)),
    _k("log.cleaner.io.buffer.load.factor", "double", "0.9",
       "How full the cleaner's key map may get.", between(0.01, 1.0)),
    _k("log.flush.scheduler.interval.ms", "long", str(LONG_MAX),
       "How often logs are checked for a flush due by flush.ms.", at_least(0)),
    _k("log.flush.offset.checkpoint.interval.ms", "int", "60000",
       "How often the recovery-point, HW and log-start-offset checkpoints are written.",
       at_least(0)),
    _k("num.recovery.threads.per.data.dir", "int", "2", "Accepted; recovery runs per dir.",
       at_least(1)),
    # Broker lifecycle.
    _k("broker.heartbeat.interval.ms", "int", "2000", "Broker heartbeat period.", at_least(1)),
    _k("broker.session.timeout.ms", "int", "9000", "Fence a broker after this long silent.",
       at_least(1)),
    _k("initial.broker.registration.timeout.ms", "int", "60000",
       "Give up start-up if registration takes longer.", at_least(1)),
    # Network.
    _k("socket.request.max.bytes", "int", "104857600", "Largest request frame.", at_least(1)),
    _k("socket.send.buffer.bytes", "int", "-1", "SO_SNDBUF; -1 = OS default.",
       at_least(-1)),
    _k("socket.receive.buffer.bytes", "int", "-1", "SO_RCVBUF; -1 = OS default.",
       at_least(-1)),
    _k("connections.max.idle.ms", "long", "600000",
       "Close connections idle (no byte either way, no request pending) this long; -1: "
       "never.", _idle_ms),
    _k("max.connections", "int", str(INT_MAX),
       "Most connections of the node's client listeners at once (its controller listeners "
       "count apart); listener.name.<name>.max.connections limits one listener. At the "
       "limit new connections wait unaccepted.", at_least(0)),
    _k("max.connections.per.ip", "int", str(INT_MAX),
       "Most connections from one address; more are closed once accepted. 0 only with "
       "max.connections.per.ip.overrides.", at_least(0)),
    _k("max.connections.per.ip.overrides", "string", "",
       "Per-address limits as host:count,host:count (host name or IP address)."),
    _k("queued.max.requests", "int", "500",
       "Most requests read and not yet handled; at the limit the node stops reading "
       "requests.", at_least(1)),
    _k("queued.max.request.bytes", "long", "209715200",
       "Most bytes of requests read and not yet handled; at the limit the node stops "
       "reading requests. At least socket.request.max.bytes; -1: no bound."),
    _k("raftka.socket.request.read.timeout.ms", "long", "30000",
       "Raftka: a request must arrive whole within this long of its first byte, or its "
       "connection is closed.", at_least(1)),
    _k("raftka.socket.request.max.elements", "int", "200000",
       "Raftka: the most array elements (topics, partitions, resources, ids) one request may "
       "name in all; a request naming more closes its connection, as an oversized frame "
       "does.", at_least(1)),
    _k("raftka.shutdown.timeout.ms", "long", "30000",
       "Raftka: the longest a node takes to stop after SIGTERM; then it flushes its logs "
       "and exits.", at_least(1)),
    _k("num.network.threads", "int", "3", "Accepted; one trio loop serves all.", at_least(1)),
    _k("num.io.threads", "int", "8", "Accepted; one trio loop serves all.", at_least(1)),
    _k("message.max.bytes", "int", "1048588", "Largest record batch accepted.", at_least(0)),
    _k("fetch.max.bytes", "int", "57671680", "Most bytes a fetch response carries.",
       at_least(1024)),
    # Topics.
    _k("num.partitions", "int", "1", "Partitions of auto-created topics.", at_least(1)),
    _k("default.replication.factor", "int", "1", "Replication of auto-created topics.",
       at_least(1)),
    _k("auto.create.topics.enable", "boolean", "true", "Create topics on first metadata use."),
    _k("delete.topic.enable", "boolean", "true", "Allow topic deletion."),
    _k("auto.leader.rebalance.enable", "boolean", "true", "Move leaders back to preferred."),
    _k("leader.imbalance.check.interval.seconds", "long", "300", "Rebalance check period.",
       at_least(1)),
    _k("leader.imbalance.per.broker.percentage", "int", "10", "Tolerated imbalance.",
       at_least(0)),
    # Replication.
    _k("replica.lag.time.max.ms", "long", "30000", "Out of the ISR after lagging this long.",
       at_least(1)),
    _k("replica.fetch.max.bytes", "int", "1048576", "Follower fetch size per partition.",
       at_least(0)),
    _k("replica.fetch.response.max.bytes", "int", "10485760", "Follower fetch size.",
       at_least(0)),
    _k("replica.fetch.wait.max.ms", "int", "500", "Follower fetch long-poll.", at_least(0)),
    _k("replica.fetch.min.bytes", "int", "1", "Follower fetch min bytes.", at_least(1)),
    _k("replica.fetch.backoff.ms", "int", "1000", "Backoff after a follower fetch error.",
       at_least(0)),
    _k("replica.selector.class", "string", None,
       "Where consumers that name a rack read from (KIP-392): Kafka's "
       "org.apache.kafka.common.replica.RackAwareReplicaSelector or LeaderSelector; "
       "no other class can be loaded.",
       one_of("org.apache.kafka.common.replica.RackAwareReplicaSelector",
              "org.apache.kafka.common.replica.LeaderSelector")),
    _k("replica.socket.receive.buffer.bytes", "int", "-1",
       "SO_RCVBUF of follower fetch connections; -1 = OS default.", at_least(-1)),
    _k("num.replica.fetchers", "int", "1", "Fetcher tasks per source broker.", at_least(1)),
    # Replication throttles (Kafka's ReplicationQuotaManager); the rates are dynamic.
    _k("leader.replication.throttled.rate", "long", str(LONG_MAX),
       "Bytes/s a leader serves, in total, to followers outside the ISR of the replicas "
       "listed in leader.replication.throttled.replicas.", at_least(0)),
    _k("follower.replication.throttled.rate", "long", str(LONG_MAX),
       "Bytes/s a follower fetches, in total, for the replicas listed in "
       "follower.replication.throttled.replicas.", at_least(0)),
    _k("replication.quota.window.num", "int", "11",
       "Samples kept to measure the replication throttle rates.", at_least(1)),
    _k("replication.quota.window.size.seconds", "int", "1",
       "Length of each replication throttle sample.", at_least(1)),
    # Client quotas: the sliding window of the byte-rate and request-time rates.
    _k("quota.window.num", "int", "11", "Samples in a client quota's rate window.",
       at_least(1)),
    _k("quota.window.size.seconds", "int", "1", "Length of one client quota sample.",
       at_least(1)),
    # Metrics (Kafka publishes over JMX; Raftka serves Prometheus' format, see broker.metrics).
    _k("raftka.metrics.listener", "string", None,
       "Raftka: http://HOST:PORT serving /metrics for Prometheus; unset means "
       "http://127.0.0.1:(9404 + node.id - 1), empty disables it."),
    # Groups and offsets.
    _k("offsets.topic.num.partitions", "int", "50", "Partitions of __consumer_offsets.",
       at_least(1)),
    _k("offsets.topic.replication.factor", "short", "3",
       "Replication of __consumer_offsets (creation fails until this many brokers are live).",
       at_least(1)),
    _k("offsets.topic.segment.bytes", "int", "104857600", "Segment size of __consumer_offsets.",
       at_least(1)),
    _k("offsets.retention.minutes", "int", "10080", "Keep committed offsets this long.",
       at_least(1)),
    _k("offsets.retention.check.interval.ms", "long", "600000", "Offset expiry check period.",
       at_least(1)),
    _k("offsets.commit.timeout.ms", "int", "5000", "Offset commit wait.", at_least(1)),
    _k("offset.metadata.max.bytes", "int", "4096", "Largest offset commit metadata string."),
    _k("group.initial.rebalance.delay.ms", "int", "3000", "Wait for more members first."),
    _k("group.min.session.timeout.ms", "int", "6000", "Smallest consumer session timeout."),
    _k("group.max.session.timeout.ms", "int", "1800000", "Largest consumer session timeout."),
    _k("group.max.size", "int", str(INT_MAX), "Most members in one group.", at_least(1)),
    _k("group.coordinator.rebalance.protocols", "list", "classic,consumer",
       "Group protocols the coordinators serve; classic is required.", _rebalance_protocols),
    _k("group.consumer.assignors", "list", "uniform,range",
       "Server-side assignors of consumer groups (group.protocol=consumer); the first is "
       "the default.", _consumer_assignors),
    _k("group.consumer.session.timeout.ms", "int", "45000",
       "Consumer group members not heard from this long are fenced.", at_least(1)),
    _k("group.consumer.heartbeat.interval.ms", "int", "5000",
       "How often consumer group members heartbeat.", at_least(1)),
    _k("group.consumer.max.size", "int", str(INT_MAX), "Most members in one consumer group.",
       at_least(1)),
    # Transactions and producer ids.
    _k("transaction.state.log.num.partitions", "int", "50", "Partitions of the txn log.",
       at_least(1)),
    _k("transaction.state.log.replication.factor", "short", "3", "Replication of the txn log.",
       at_least(1)),
    _k("transactional.id.expiration.ms", "int", "604800000", "Expire idle transactional ids.",
       at_least(1)),
    _k("transaction.state.log.min.isr", "int", "2",
       "min.insync.replicas of __transaction_state.", at_least(1)),
    _k("transaction.state.log.segment.bytes", "int", "104857600",
       "Segment size of __transaction_state.", at_least(1)),
    _k("transaction.max.timeout.ms", "int", "900000",
       "Largest transaction.timeout.ms a producer may ask for.", at_least(1)),
    _k("transaction.abort.timed.out.transaction.cleanup.interval.ms", "int", "10000",
       "How often transactions past their timeout are aborted.", at_least(1)),
    _k("transaction.remove.expired.transaction.cleanup.interval.ms", "int", "3600000",
       "How often idle transactional ids are expired.", at_least(1)),
    _k("transaction.partition.verification.enable", "boolean", "true",
       "Ask the coordinator before a transactional batch opens a transaction (KIP-890)."),
    _k("producer.id.expiration.ms", "int", "86400000", "Expire idle producer ids.", at_least(1)),
    # Leader election.
    _k("unclean.leader.election.enable", "boolean", "false",
       "Elect an out-of-sync replica when no ISR member lives."),
    _k("min.insync.replicas", "int", "1", "Fewest ISR members for acks=all.", at_least(1)),
    # Authorization (see broker.apis.authorization).
    _k("authorizer.class.name", "string", "",
       "The authorizer: org.apache.kafka.metadata.authorizer.StandardAuthorizer (or "
       "StandardAuthorizer) enables ACLs; empty means no authorization.", _authorizer_class),
    _k("super.users", "string", "",
       "Principals allowed everything, separated by semicolons (User:admin;User:broker).",
       _principals),
    _k("allow.everyone.if.no.acl.found", "boolean", "false",
       "Allow an action on a resource no ACL covers (otherwise only super users may)."),
)
