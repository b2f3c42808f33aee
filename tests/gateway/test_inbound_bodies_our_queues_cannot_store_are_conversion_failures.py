"""Bodies that parse but that PostgreSQL cannot store (NaN, Infinity, numbers beyond a double,
NUL characters) are conversion failures (the exception queue), not failures of the batch."""

from __future__ import annotations

import pytest

from gateway.conversion import inbound, payload_of
from gateway.drivers.base import ConversionError, GatewayMessage

JSON = "application/json"


@pytest.mark.parametrize(
    "body, reason",
    [
        (b"NaN", "NaN"),
        (b'{"x": Infinity}', "Infinity"),
        (b"[1e400]", "too large"),
        (b"a\x00b", "NUL"),
        (b"\xff\xfe", "not UTF-8"),
        (b"{not json", "not JSON"),
    ],
)
def test_a_declared_json_body_we_cannot_store_is_refused_with_the_reason(body, reason):
    with pytest.raises(ConversionError, match=reason):
        payload_of(GatewayMessage(body=body, content_type=JSON))


def test_an_escaped_nul_is_refused_once_decoded():
    message = GatewayMessage(body=b'{"a": "\\u0000"}', content_type=JSON)
    with pytest.raises(ConversionError, match="NUL"):
        inbound(message, payload_of(message), preserve_id=False, link="L")


def test_undeclared_bodies_that_are_not_storable_json_stay_text():
    assert payload_of(GatewayMessage(body=b"NaN")) == "NaN"
    assert payload_of(GatewayMessage(body=b'{"info": "e"}')) == {"info": "e"}
    assert payload_of(GatewayMessage(body=b"42", content_type="text/plain")) == "42"
