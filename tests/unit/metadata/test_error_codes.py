"""The controller's error codes are Kafka's numbers: `metadata` takes them from the wire
codec's enum (one home) instead of keeping copies."""

from __future__ import annotations

from clients.protocol import ErrorCode
from metadata import errors


def test_every_controller_error_code_has_kafkas_number() -> None:
    codes = {name: value for name, value in vars(errors).items()
             if name.isupper() and isinstance(value, int)}
    assert codes == {}  # no copies: the decisions use clients.protocol.ErrorCode
    assert ErrorCode.INVALID_UPDATE_VERSION == 95
