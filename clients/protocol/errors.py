"""Kafka's error codes: numbers and names as Kafka's ``Errors`` enum, with retriability."""

from __future__ import annotations

from enum import IntEnum


class ErrorCode(IntEnum):
    """A Kafka error code. ``retriable`` is True where Kafka's exception is retriable."""

    retriable: bool
    message: str

    def __new__(cls, code: int, retriable: bool, message: str) -> "ErrorCode":
        member = int.__new__(cls, code)
        member._value_ = code
        member.retriable = retriable
        member.message = message
        return member

    UNKNOWN_SERVER_ERROR = (
        -1, False, 'The server experienced an unexpected error when processing the request.'
    )
    NONE = (0, False, '')
    OFFSET_OUT_OF_RANGE = (
        1, False, 'The requested offset is not within the range of offsets maintained by the server.'
    )
    CORRUPT_MESSAGE = (
        2, True, 'The message failed its CRC check, exceeds the valid size, has a null key for a compacted topic, or is otherwise corrupt.'
    )
    UNKNOWN_TOPIC_OR_PARTITION = (3, True, 'This server does not host this topic-partition.')
    INVALID_FETCH_SIZE = (4, False, 'The requested fetch size is invalid.')
    LEADER_NOT_AVAILABLE = (
        5, True, 'There is no leader for this topic-partition: a leader election is in progress.'
    )
    NOT_LEADER_OR_FOLLOWER = (
        6, True, 'This broker is not the leader (or not a replica) of the topic-partition.'
    )
    REQUEST_TIMED_OUT = (7, True, 'The request timed out.')
    BROKER_NOT_AVAILABLE = (8, False, 'The broker is not available.')
    REPLICA_NOT_AVAILABLE = (
        9, True, 'The replica is not available for the requested topic-partition.'
    )
    MESSAGE_TOO_LARGE = (
        10, False, 'The request included a message larger than the maximum the server accepts.'
    )
    STALE_CONTROLLER_EPOCH = (11, False, 'The controller moved to another broker.')
    OFFSET_METADATA_TOO_LARGE = (12, False, 'The metadata of the offset commit is too large.')
    NETWORK_EXCEPTION = (13, True, 'The server disconnected before a response was received.')
    COORDINATOR_LOAD_IN_PROGRESS = (
        14, True, 'The coordinator is loading and cannot process requests yet.'
    )
    COORDINATOR_NOT_AVAILABLE = (15, True, 'The coordinator is not available.')
    NOT_COORDINATOR = (16, True, 'This is not the correct coordinator.')
    INVALID_TOPIC_EXCEPTION = (17, False, 'The request attempted an operation on an invalid topic.')
    RECORD_LIST_TOO_LARGE = (18, False, 'The batch is larger than the configured segment size.')
    NOT_ENOUGH_REPLICAS = (19, True, 'Fewer in-sync replicas than required: records rejected.')
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = (
        20, True, 'Records were written, but to fewer in-sync replicas than required.'
    )
    INVALID_REQUIRED_ACKS = (21, False, 'The produce request has an invalid acks value.')
    ILLEGAL_GENERATION = (22, False, 'The group generation id is not valid.')
    INCONSISTENT_GROUP_PROTOCOL = (
        23, False, "The member's protocols are incompatible with the group's."
    )
    INVALID_GROUP_ID = (24, False, 'The group id is invalid.')
    UNKNOWN_MEMBER_ID = (25, False, 'The coordinator does not know this member.')
    INVALID_SESSION_TIMEOUT = (
        26, False, 'The session timeout is outside the range the broker allows.'
    )
    REBALANCE_IN_PROGRESS = (27, False, 'The group is rebalancing, so a rejoin is needed.')
    INVALID_COMMIT_OFFSET_SIZE = (28, False, 'The committed offset data size is not valid.')
    TOPIC_AUTHORIZATION_FAILED = (29, False, 'Topic authorization failed.')
    GROUP_AUTHORIZATION_FAILED = (30, False, 'Group authorization failed.')
    CLUSTER_AUTHORIZATION_FAILED = (31, False, 'Cluster authorization failed.')
    INVALID_TIMESTAMP = (32, False, 'The timestamp of the message is out of the acceptable range.')
    UNSUPPORTED_SASL_MECHANISM = (
        33, False, 'The broker does not support the requested SASL mechanism.'
    )
    ILLEGAL_SASL_STATE = (34, False, 'The request is not valid in the current SASL state.')
    UNSUPPORTED_VERSION = (35, False, 'The version of the API is not supported.')
    TOPIC_ALREADY_EXISTS = (36, False, 'A topic with this name already exists.')
    INVALID_PARTITIONS = (37, False, 'The number of partitions is invalid.')
    INVALID_REPLICATION_FACTOR = (38, False, 'The replication factor is invalid.')
    INVALID_REPLICA_ASSIGNMENT = (39, False, 'The replica assignment is invalid.')
    INVALID_CONFIG = (40, False, 'The configuration is invalid.')
    NOT_CONTROLLER = (41, True, 'This is not the correct controller for this cluster.')
    INVALID_REQUEST = (42, False, 'The request is malformed or was sent to an incompatible broker.')
    UNSUPPORTED_FOR_MESSAGE_FORMAT = (
        43, False, 'The message format version does not support the request.'
    )
    POLICY_VIOLATION = (44, False, 'The request parameters do not satisfy the configured policy.')
    OUT_OF_ORDER_SEQUENCE_NUMBER = (
        45, False, 'The broker received an out of order sequence number.'
    )
    DUPLICATE_SEQUENCE_NUMBER = (46, False, 'The broker received a duplicate sequence number.')
    INVALID_PRODUCER_EPOCH = (47, False, 'The producer attempted to produce with an old epoch.')
    INVALID_TXN_STATE = (
        48, False, 'The producer attempted a transactional operation in an invalid state.'
    )
    INVALID_PRODUCER_ID_MAPPING = (
        49, False, 'The producer id is not currently assigned to its transactional id.'
    )
    INVALID_TRANSACTION_TIMEOUT = (
        50, False, 'The transaction timeout is larger than the broker allows.'
    )
    CONCURRENT_TRANSACTIONS = (
        51, True, 'Another operation on the same transaction is in progress.'
    )
    TRANSACTION_COORDINATOR_FENCED = (
        52, False, 'The transaction coordinator sending WriteTxnMarkers is no longer the coordinator.'
    )
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = (53, False, 'Transactional id authorization failed.')
    SECURITY_DISABLED = (54, False, 'Security features are disabled.')
    OPERATION_NOT_ATTEMPTED = (
        55, False, 'The broker did not attempt this operation because others in the batch failed.'
    )
    KAFKA_STORAGE_ERROR = (56, True, 'Disk error when accessing a log file.')
    LOG_DIR_NOT_FOUND = (57, False, 'The log directory is not found in the broker config.')
    SASL_AUTHENTICATION_FAILED = (58, False, 'SASL authentication failed.')
    UNKNOWN_PRODUCER_ID = (59, False, 'The broker has no state for this producer id.')
    REASSIGNMENT_IN_PROGRESS = (60, False, 'A partition reassignment is in progress.')
    DELEGATION_TOKEN_AUTH_DISABLED = (61, False, 'The delegation token feature is not enabled.')
    DELEGATION_TOKEN_NOT_FOUND = (62, False, 'The delegation token is not found on the server.')
    DELEGATION_TOKEN_OWNER_MISMATCH = (63, False, 'The principal is not a valid owner or renewer.')
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = (
        64, False, 'Delegation token requests are not allowed on this channel.'
    )
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = (65, False, 'Delegation token authorization failed.')
    DELEGATION_TOKEN_EXPIRED = (66, False, 'The delegation token has expired.')
    INVALID_PRINCIPAL_TYPE = (67, False, 'The principal type is not supported.')
    NON_EMPTY_GROUP = (68, False, 'The group is not empty.')
    GROUP_ID_NOT_FOUND = (69, False, 'The group id does not exist.')
    FETCH_SESSION_ID_NOT_FOUND = (70, True, 'The fetch session id was not found.')
    INVALID_FETCH_SESSION_EPOCH = (71, True, 'The fetch session epoch is invalid.')
    LISTENER_NOT_FOUND = (
        72, True, 'The leader has no listener matching the one the metadata request came on.'
    )
    TOPIC_DELETION_DISABLED = (73, False, 'Topic deletion is disabled.')
    FENCED_LEADER_EPOCH = (74, True, "The leader epoch in the request is older than the broker's.")
    UNKNOWN_LEADER_EPOCH = (75, True, "The leader epoch in the request is newer than the broker's.")
    UNSUPPORTED_COMPRESSION_TYPE = (
        76, False, "The client does not support the partition's compression type."
    )
    STALE_BROKER_EPOCH = (77, False, 'The broker epoch has changed.')
    OFFSET_NOT_AVAILABLE = (
        78, True, "The leader's high watermark has not caught up since a recent election."
    )
    MEMBER_ID_REQUIRED = (79, False, 'The member needs a member id before joining the group.')
    PREFERRED_LEADER_NOT_AVAILABLE = (80, True, 'The preferred leader was not available.')
    GROUP_MAX_SIZE_REACHED = (81, False, 'The group has reached its maximum size.')
    FENCED_INSTANCE_ID = (
        82, False, 'Another member with the same group.instance.id has registered.'
    )
    ELIGIBLE_LEADERS_NOT_AVAILABLE = (83, True, 'Eligible partition leaders are not available.')
    ELECTION_NOT_NEEDED = (84, False, 'Leader election is not needed for the partition.')
    NO_REASSIGNMENT_IN_PROGRESS = (85, False, 'No partition reassignment is in progress.')
    GROUP_SUBSCRIBED_TO_TOPIC = (
        86, False, 'The group is subscribed to the topic, so its offsets cannot be deleted.'
    )
    INVALID_RECORD = (87, False, 'The record failed broker validation and was rejected.')
    UNSTABLE_OFFSET_COMMIT = (88, True, 'There are unstable offsets that need to be cleared.')
    THROTTLING_QUOTA_EXCEEDED = (89, True, 'The throttling quota has been exceeded.')
    PRODUCER_FENCED = (
        90, False, 'A newer producer with the same transactional id fenced this one.'
    )
    RESOURCE_NOT_FOUND = (91, False, 'The request referred to a resource that does not exist.')
    DUPLICATE_RESOURCE = (92, False, 'The request referred to the same resource twice.')
    UNACCEPTABLE_CREDENTIAL = (
        93, False, 'The credential does not meet the acceptability criteria.'
    )
    INCONSISTENT_VOTER_SET = (
        94, False, 'The sender or recipient of a voter-only request is not an expected voter.'
    )
    INVALID_UPDATE_VERSION = (95, False, 'The update version is invalid.')
    FEATURE_UPDATE_FAILED = (96, False, 'Finalized features could not be updated.')
    PRINCIPAL_DESERIALIZATION_FAILURE = (
        97, False, 'The request principal could not be deserialized during forwarding.'
    )
    SNAPSHOT_NOT_FOUND = (98, False, 'The requested snapshot was not found.')
    POSITION_OUT_OF_RANGE = (99, False, 'The requested position is outside the snapshot.')
    UNKNOWN_TOPIC_ID = (100, True, 'This server does not host this topic id.')
    DUPLICATE_BROKER_REGISTRATION = (101, False, 'This broker id is already in use.')
    BROKER_ID_NOT_REGISTERED = (102, False, 'The broker id is not registered.')
    INCONSISTENT_TOPIC_ID = (103, True, "The log's topic id does not match the request's.")
    INCONSISTENT_CLUSTER_ID = (
        104, False, "The cluster id in the request does not match the server's."
    )
    TRANSACTIONAL_ID_NOT_FOUND = (105, False, 'The transactional id could not be found.')
    FETCH_SESSION_TOPIC_ID_ERROR = (106, True, 'The fetch session used topic ids inconsistently.')
    INELIGIBLE_REPLICA = (107, False, 'The new ISR contains an ineligible replica.')
    NEW_LEADER_ELECTED = (108, False, 'The partition state was updated but the leader has changed.')
    OFFSET_MOVED_TO_TIERED_STORAGE = (
        109, False, 'The requested offset was moved to tiered storage.'
    )
    FENCED_MEMBER_EPOCH = (110, False, 'The member epoch is fenced by the group coordinator.')
    UNRELEASED_INSTANCE_ID = (
        111, False, 'The instance id is still used by another member of the group.'
    )
    UNSUPPORTED_ASSIGNOR = (
        112, False, 'The assignor or its version range is not supported by the group.'
    )
    STALE_MEMBER_EPOCH = (113, False, 'The member epoch is stale.')
    MISMATCHED_ENDPOINT_TYPE = (
        114, False, 'The request was sent to an endpoint of the wrong type.'
    )
    UNSUPPORTED_ENDPOINT_TYPE = (115, False, 'This endpoint type is not supported yet.')
    UNKNOWN_CONTROLLER_ID = (116, False, 'This controller id is not known.')
    UNKNOWN_SUBSCRIPTION_ID = (117, False, 'The telemetry subscription id is invalid or outdated.')
    TELEMETRY_TOO_LARGE = (118, False, 'The telemetry push is larger than the broker accepts.')
    INVALID_REGISTRATION = (119, False, 'The controller considers the broker registration invalid.')
    TRANSACTION_ABORTABLE = (
        120, False, 'The transaction failed; the client can abort it and continue.'
    )
    INVALID_RECORD_STATE = (121, False, 'The record state is invalid for acknowledgement.')
    SHARE_SESSION_NOT_FOUND = (122, True, 'The share session was not found.')
    INVALID_SHARE_SESSION_EPOCH = (123, True, 'The share session epoch is invalid.')
    FENCED_STATE_EPOCH = (124, False, 'The share-group state epoch did not match.')
    INVALID_VOTER_KEY = (125, False, "The voter key does not match the receiving replica's key.")
    DUPLICATE_VOTER = (126, False, 'The voter is already in the voter set.')
    VOTER_NOT_FOUND = (127, False, 'The voter is not in the voter set.')
    INVALID_REGULAR_EXPRESSION = (128, False, 'The regular expression is not valid.')
    REBOOTSTRAP_REQUIRED = (129, False, 'Client metadata is stale; the client should rebootstrap.')
    STREAMS_INVALID_TOPOLOGY = (130, False, 'The supplied topology is invalid.')
    STREAMS_INVALID_TOPOLOGY_EPOCH = (131, False, 'The supplied topology epoch is invalid.')
    STREAMS_TOPOLOGY_FENCED = (132, False, 'The supplied topology epoch is outdated.')
    SHARE_SESSION_LIMIT_REACHED = (133, False, 'The limit of share sessions has been reached.')

    @classmethod
    def from_code(cls, code: int) -> ErrorCode:
        """The member for ``code``; unknown codes map to UNKNOWN_SERVER_ERROR, as in Kafka."""
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN_SERVER_ERROR


class KafkaError(Exception):
    """An error a Kafka broker reported, for client-side use."""

    def __init__(self, code: ErrorCode | int, message: str | None = None) -> None:
        self.code = ErrorCode.from_code(int(code))
        self.message = message or self.code.message
        super().__init__(f"{self.code.name} ({int(self.code)}): {self.message}")

    @property
    def retriable(self) -> bool:
        return self.code.retriable
