"""Server configuration: Kafka `.properties` files, keys, defaults and validation."""

from broker.config.endpoints import Listener
from broker.config.errors import ConfigError
from broker.config.server_config import ConfigSource, ConfigValue, ServerConfig
from broker.config.uuids import parse_uuid, random_uuid, random_uuid_str, uuid_to_str
from clients.common.properties import format_properties, load_properties, parse_properties

__all__ = [
    "ConfigError",
    "ConfigSource",
    "ConfigValue",
    "Listener",
    "ServerConfig",
    "format_properties",
    "load_properties",
    "parse_properties",
    "parse_uuid",
    "random_uuid",
    "random_uuid_str",
    "uuid_to_str",
]
