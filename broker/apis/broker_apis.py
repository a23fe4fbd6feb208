"""The API set of a broker's client listeners, installed on one router."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, cast

from broker.apis.acls import AclHandlers
from broker.apis.admin import ForwardingHandlers
from broker.apis.authorization import ALLOW_ALL, Authorization
from broker.apis.api_versions import install_api_versions
from broker.apis.client_quota_enforcement import ClientQuotaEnforcement
from broker.apis.client_quotas import DescribeClientQuotasHandler
from broker.apis.configs import DescribeConfigsHandler
from broker.apis.consumer_groups import ConsumerGroupHandlers
from broker.apis.fetch import FetchHandler
from broker.apis.groups import GroupHandlers
from broker.apis.log_dirs import DescribeLogDirsHandler
from broker.apis.metadata import AutoCreateTopics, MetadataHandlers
from broker.apis.offsets import OffsetHandlers
from broker.apis.produce import ProduceHandler
from broker.apis.producer_ids import InitProducerIdHandler
from broker.apis.transactions import TransactionHandlers
from broker.apis.request import RequestRouter
from broker.apis.txn_markers import OffsetsMarkerListener, TxnMarkerHandlers
from broker.apis.sasl import SaslHandlers
from broker.apis.scram import DescribeScramHandler
from broker.apis.topic_partitions import DescribeTopicPartitionsHandler
from broker.controller_client import ControllerClient
from broker.group.consumer.manager import ConsumerGroupManager
from broker.group.consumer.settings import ConsumerGroupSettings
from broker.group.coordinator import GroupCoordinator
from broker.producer_id_manager import ProducerIdManager
from broker.quota.manager import ClientQuotas
from broker.replica.manager import ReplicaManager
from broker.txn.coordinator import TransactionCoordinator
from broker.replica.txn_verification import TransactionVerifier
from metadata.image import MetadataImage

if TYPE_CHECKING:
    from broker.config import ServerConfig


def install_broker_apis(router: RequestRouter, config: "ServerConfig", cluster_id: str,
                        image: Callable[[], MetadataImage], *, replicas: ReplicaManager,
                        groups: GroupCoordinator, auto_create: AutoCreateTopics | None = None,
                        producer_ids: ProducerIdManager | None = None,
                        controller: ControllerClient | None = None,
                        txn_verifier: TransactionVerifier | None = None,
                        offsets_marker_listener: OffsetsMarkerListener | None = None,
                        transactions: TransactionCoordinator | None = None,
                        authorization: Authorization = ALLOW_ALL) -> RequestRouter:
    """Every API a broker listener serves, on `router`: ApiVersions, Metadata and
    DescribeCluster, the data APIs, the group APIs, InitProducerId (with `producer_ids`) and
    the admin and ACL APIs it forwards to the active controller (with `controller`), each
    checking `authorization` per resource. Transactional produce is verified with
    `txn_verifier` (KIP-890) when given; markers on `__consumer_offsets` partitions are
    reported to `offsets_marker_listener`. The transactional APIs are served with
    `transactions`."""
    authz = authorization
    install_api_versions(router)
    SaslHandlers().register(router)
    MetadataHandlers(image, cluster_id, auto_create=auto_create, authz=authz,
                     broker_id=config.node_id,
                     session_lapsed=lambda: replicas.session_lost).register(router)
    ProduceHandler(replicas, txn_verifier, authz).register(router)
    TxnMarkerHandlers(replicas, offsets_marker_listener, authz=authz).register(router)
    FetchHandler(replicas, authz).register(router)
    OffsetHandlers(replicas, authz).register(router)
    DescribeConfigsHandler(config, image, authz).register(router)
    DescribeScramHandler(image).register(router)
    DescribeClientQuotasHandler(image).register(router)
    DescribeTopicPartitionsHandler(image, authz).register(router)
    consumer_groups = ConsumerGroupManager(ConsumerGroupSettings.from_config(config))
    groups.engine.active_consumer_groups = consumer_groups.active
    GroupHandlers(groups, image, transactions, authz, consumer_groups).register(router)
    ConsumerGroupHandlers(groups, consumer_groups, image, authz).register(router)
    DescribeLogDirsHandler(replicas).register(router)
    if producer_ids is not None:
        InitProducerIdHandler(producer_ids, transactions, authz).register(router)
    if transactions is not None:
        TransactionHandlers(transactions, groups, image, authz).register(router)
    forwarding = None
    if controller is not None:
        forwarding = ForwardingHandlers(controller, authz=authz, image=image)
        forwarding.register(router)
    AclHandlers(image, enabled=authz.enabled,
                forward=forwarding.forward if forwarding is not None else None).register(router)
    # Last: it wraps the handlers registered above with the client quotas.
    quotas = ClientQuotas(image, samples=cast(int, config.get("quota.window.num")),
                          window_seconds=cast(int, config.get("quota.window.size.seconds")))
    ClientQuotaEnforcement(quotas).install(router)
    return router
