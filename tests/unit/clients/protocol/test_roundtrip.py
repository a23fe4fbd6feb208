"""Property test: any schema-conforming body survives encode then decode, at every version."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clients.protocol import APIS, ApiKey, decode_request, decode_response, encode_request, encode_response
from tests.unit.clients.protocol.schema_values import body_strategy, expected_body, normalise

CASES = [
    (key, version, request)
    for key, api in APIS.items()
    for version in range(api.versions[0], api.versions[1] + 1)
    for request in (True, False)
]


@st.composite
def messages(draw: st.DrawFn) -> tuple[ApiKey, int, bool, dict]:
    key, version, request = draw(st.sampled_from(CASES))
    return key, version, request, draw(body_strategy(key, version, request))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages(), st.integers(-(2**31), 2**31 - 1), st.none() | st.text(max_size=10))
def test_encode_then_decode_returns_the_body(
    message: tuple[ApiKey, int, bool, dict], correlation_id: int, client_id: str | None
) -> None:
    key, version, request, body = message
    api = APIS[key]
    expected = expected_body(api.request if request else api.response, version, body)
    if request:
        # As dicts for every API; the generated classes are swept in test_wire_sweep.
        decoded = decode_request(encode_request(key, version, correlation_id, client_id, body),
                                 typed=False)
        assert (decoded.api_key, decoded.api_version) == (key, version)
        assert (decoded.correlation_id, decoded.client_id) == (correlation_id, client_id)
        assert normalise(decoded.body) == expected
    else:
        got_id, got = decode_response(key, version, encode_response(key, version, correlation_id, body),
                                      typed=False)
        assert got_id == correlation_id
        assert normalise(got) == expected
