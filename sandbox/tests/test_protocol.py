from __future__ import annotations

import socket
import struct

import pytest

from sandbox.limits import Limits
from sandbox.protocol import JobRequest, ProtocolError, parse_request, recv_message, send_message


def test_messages_round_trip() -> None:
    left, right = socket.socketpair()
    with left, right:
        send_message(left, {"a": [1, 2]})
        assert recv_message(right, 1024) == {"a": [1, 2]}


def test_an_oversized_message_is_refused_before_reading() -> None:
    left, right = socket.socketpair()
    with left, right:
        left.sendall(struct.pack(">I", 10**9))
        with pytest.raises(ProtocolError, match="exceeds"):
            recv_message(right, 1024)


def test_a_truncated_message_is_an_error() -> None:
    left, right = socket.socketpair()
    with right:
        left.sendall(struct.pack(">I", 100) + b"{}")
        left.close()
        with pytest.raises(ProtocolError, match="closed"):
            recv_message(right, 1024)


def test_requests_are_validated() -> None:
    request = JobRequest(source="print(1)", input_json="null", limits=Limits())
    assert parse_request(request.to_message()) == request
    bad = request.to_message() | {"limits": {"memory_mb": -5}}
    with pytest.raises(ProtocolError, match="invalid limits"):
        parse_request(bad)
    with pytest.raises(ProtocolError, match="source"):
        parse_request(request.to_message() | {"source": 5})
