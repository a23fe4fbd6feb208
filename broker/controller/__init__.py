"""The controller role: the active controller serving Kafka's controller RPCs over the quorum."""

from broker.controller.describe_quorum import ControllerEndpoint
from broker.controller.responses import error_response
from broker.controller.service import QuorumController, controller_endpoints
from broker.controller.settings import broker_config_validator, controller_settings_from_config

__all__ = [
    "ControllerEndpoint",
    "QuorumController",
    "broker_config_validator",
    "controller_endpoints",
    "controller_settings_from_config",
    "error_response",
]
