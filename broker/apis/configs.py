"""DescribeConfigs (v1-4): topic configs from the metadata image, broker configs from the
server configuration, each with Kafka's source and (on request) synonyms."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Callable, Iterable

from broker.apis.authorization import ALLOW_ALL, AclOperation, Authorization, ResourceType
from broker.apis.common import Slicer
from broker.apis.request import DecodedRequest, RequestContext, RequestRouter
from clients.protocol import ApiKey, ErrorCode
from clients.protocol.messages.describe_configs import (
    DescribeConfigsRequestData,
    DescribeConfigsResponseData,
)
from metadata.image import MetadataImage
from metadata.topic_config_layers import (
    BrokerLayers,
    ConfigSource,
    resolve_topic_config,
    topic_config_synonyms,
)
from metadata.topic_configs import TOPIC_CONFIGS, ConfigValidationError
from metadata.topic_names import topic_name_error

if TYPE_CHECKING:
    from broker.config import ServerConfig

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
# DescribeConfigs sources.
DYNAMIC_BROKER_CONFIG = int(ConfigSource.DYNAMIC_BROKER_CONFIG)
DYNAMIC_DEFAULT_BROKER_CONFIG = int(ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
# Kafka's ConfigEntry.ConfigType numbers by definition type.
CONFIG_TYPES = {"boolean": 1, "string": 2, "int": 3, "short": 4, "long": 5, "double": 6,
                "list": 7, "class": 8, "password": 9}

Result = DescribeConfigsResponseData.DescribeConfigsResult
Entry = DescribeConfigsResponseData.DescribeConfigsResourceResult
Synonym = DescribeConfigsResponseData.DescribeConfigsSynonym


def config_text(value: object) -> str | None:
    """A parsed config value as Kafka prints it."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _entry(name: str, value: str | None, source: int, *, config_type: str, doc: str | None,
           read_only: bool, sensitive: bool, synonyms: list[Synonym]) -> Entry:
    return Entry(name=name, value=None if sensitive else value, read_only=read_only,
                 config_source=source, is_sensitive=sensitive, synonyms=synonyms,
                 config_type=CONFIG_TYPES.get(config_type, 0), documentation=doc)


def _result(resource_type: int, name: str, code: int = ErrorCode.NONE,
            message: str | None = None, configs: list[Entry] | None = None) -> Result:
    return Result(error_code=code, error_message=message, resource_type=resource_type,
                  resource_name=name, configs=configs or [])


class DescribeConfigsHandler:
    """Answers DescribeConfigs for topics and for this broker."""

    def __init__(self, config: "ServerConfig", image: Callable[[], MetadataImage],
                 authz: Authorization = ALLOW_ALL) -> None:
        self._config = config
        self._image = image
        self._authz = authz

    def register(self, router: RequestRouter) -> None:
        router.register(ApiKey.DESCRIBE_CONFIGS, self.handle, describe_configs_error_body)

    async def handle(self, request: DecodedRequest,
                     ctx: RequestContext) -> DescribeConfigsResponseData:
        body: DescribeConfigsRequestData = request.body
        synonyms, docs = body.include_synonyms, body.include_documentation
        image = self._image()
        resources = body.resources
        # A resource named twice is refused, as Kafka's config APIs refuse duplicates: each
        # copy would otherwise cost a full description (a few KB from a few request bytes).
        named = Counter((r.resource_type, r.resource_name) for r in resources)
        results: list[Result] = []
        slicer = Slicer()
        for resource in resources:
            rtype, name = resource.resource_type, resource.resource_name
            keys = resource.configuration_keys
            wanted = None if keys is None else set(keys)
            if named[(rtype, name)] > 1:
                results.append(_result(rtype, name, ErrorCode.INVALID_REQUEST,
                                       "Duplicate resource."))
            elif rtype == TOPIC_RESOURCE and not self._authz.allowed(
                    ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, name):
                results.append(_result(rtype, name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            elif rtype == BROKER_RESOURCE and not self._authz.cluster(
                    ctx, AclOperation.DESCRIBE_CONFIGS):
                results.append(_result(rtype, name, ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
            elif rtype == TOPIC_RESOURCE:
                results.append(self._topic(image, name, wanted, synonyms, docs))
            elif rtype == BROKER_RESOURCE:
                results.append(self._broker(image, name, wanted, synonyms, docs))
            else:
                results.append(_result(rtype, name, ErrorCode.INVALID_REQUEST,
                                       f"resource type {rtype} is not supported"))
            await slicer.tick(1 + len(results[-1].configs))
        return DescribeConfigsResponseData(results=results)

    # -- topics --------------------------------------------------------------------------

    def _topic(self, image: MetadataImage, name: str, wanted: set[str] | None,
               include_synonyms: bool, include_docs: bool) -> Result:
        problem = topic_name_error(name)
        if problem is not None:
            return _result(TOPIC_RESOURCE, name, ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        if image.topic(name) is None:
            return _result(TOPIC_RESOURCE, name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                           f"topic {name} does not exist")
        overrides = dict(image.topic_config(name))
        layers = BrokerLayers.from_image(image, self._config.node_id,
                                         self._config.log_defaults())
        try:
            values = resolve_topic_config(overrides, layers)
        except ConfigValidationError as exc:
            return _result(TOPIC_RESOURCE, name, ErrorCode.INVALID_CONFIG, str(exc))
        configs = []
        for key, definition in sorted(TOPIC_CONFIGS.items()):
            if wanted is not None and key not in wanted:
                continue
            chain = [Synonym(name=s.name, value=s.value, source=int(s.source))
                     for s in topic_config_synonyms(key, overrides, layers)]
            value, source = config_text(values[key]), chain[0].source
            configs.append(_entry(key, value, source, config_type=definition.type,
                                  doc=definition.doc if include_docs else None, read_only=False,
                                  sensitive=False, synonyms=chain if include_synonyms else []))
        return _result(TOPIC_RESOURCE, name, configs=configs)

    # -- brokers -------------------------------------------------------------------------

    def _broker(self, image: MetadataImage, name: str, wanted: set[str] | None,
                include_synonyms: bool, include_docs: bool) -> Result:
        if name == "":
            dynamic = image.broker_config(None)
            return _result(BROKER_RESOURCE, name, configs=[
                _entry(k, v, DYNAMIC_DEFAULT_BROKER_CONFIG, config_type="string", doc=None,
                       read_only=False, sensitive=False,
                       synonyms=[Synonym(name=k, value=v, source=DYNAMIC_DEFAULT_BROKER_CONFIG)]
                       if include_synonyms else [])
                for k, v in sorted(dynamic.items()) if wanted is None or k in wanted])
        if name != str(self._config.node_id):
            return _result(BROKER_RESOURCE, name, ErrorCode.INVALID_REQUEST,
                           f"unexpected broker id, expected {self._config.node_id} or an "
                           f"empty string, but received {name}")
        return _result(BROKER_RESOURCE, name,
                       configs=list(self._broker_entries(image, wanted, include_synonyms,
                                                         include_docs)))

    def _broker_entries(self, image: MetadataImage, wanted: set[str] | None,
                        include_synonyms: bool, include_docs: bool) -> Iterable[Entry]:
        from broker.config.dynamic import dynamic_broker_keys

        per_broker = image.broker_config(self._config.node_id)
        cluster = image.broker_config(None)
        dynamic_keys = dynamic_broker_keys()
        definitions = _server_key_definitions()
        for described in self._config.describe_all():
            key = described.name
            if wanted is not None and key not in wanted:
                continue
            definition = definitions.get(key)
            chain: list[Synonym] = []
            if key in per_broker:
                chain.append(Synonym(name=key, value=per_broker[key], source=DYNAMIC_BROKER_CONFIG))
            if key in cluster:
                chain.append(Synonym(name=key, value=cluster[key],
                                     source=DYNAMIC_DEFAULT_BROKER_CONFIG))
            raw = None if described.raw is None else str(described.raw)
            chain.append(Synonym(name=key, value=None if described.is_sensitive else raw,
                                 source=int(described.source)))
            yield _entry(key, chain[0].value, chain[0].source,
                         config_type=definition.type if definition else "string",
                         doc=definition.doc if (definition and include_docs) else None,
                         read_only=key not in dynamic_keys, sensitive=described.is_sensitive,
                         synonyms=chain if include_synonyms else [])


def _server_key_definitions() -> dict[str, Any]:
    """Types and docs of every server key (broker log defaults included)."""
    from broker.config.definitions import SERVER_KEYS
    from broker.config.log_defaults import log_default_keys

    merged: dict[str, Any] = {name: entry.key for name, entry in log_default_keys().items()}
    merged.update((key.name, key) for key in SERVER_KEYS)
    return merged


def describe_configs_error_body(body: DescribeConfigsRequestData, version: int, error_code: int,
                                message: str | None = None) -> DescribeConfigsResponseData:
    return DescribeConfigsResponseData(results=[
        _result(r.resource_type, r.resource_name, error_code) for r in body.resources])
