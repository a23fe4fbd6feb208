"""The controller role's server: the active controller serving Kafka's controller RPCs on
the CONTROLLER listener, over the metadata quorum."""

from broker.controller_server.describe_quorum import ControllerEndpoint
from broker.controller_server.quorum_controller import QuorumController, controller_endpoints
from broker.controller_server.settings import (
    broker_config_validator,
    controller_settings_from_config,
)

__all__ = [
    "ControllerEndpoint",
    "QuorumController",
    "broker_config_validator",
    "controller_endpoints",
    "controller_settings_from_config",
]
