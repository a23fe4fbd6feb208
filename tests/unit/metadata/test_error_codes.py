"""The controller's error codes are Kafka's numbers (the wire codec's enum is the reference)."""

from __future__ import annotations

from clients.protocol import ErrorCode
from metadata import errors


def test_every_controller_error_code_has_kafkas_number() -> None:
    codes = {name: value for name, value in vars(errors).items()
             if name.isupper() and isinstance(value, int)}
    assert len(codes) >= 20
    assert {name: ErrorCode[name].value for name in codes} == codes
    assert errors.INVALID_UPDATE_VERSION == 95
