"""The wire protocol between client and per-job proxy.

One request and one response per connection, each a 4-byte big-endian length
followed by UTF-8 JSON. Both sides cap the length before reading, so neither a
client nor a compromised job can make the other side buffer without bound.
"""

from __future__ import annotations

import json
import re
import socket
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sandbox.limits import Limits, LimitsError

PROTOCOL_VERSION = 1
MAX_SOURCE_BYTES = 1024 * 1024
MAX_INPUT_BYTES = 4 * 1024 * 1024
MAX_REQUEST_BYTES = MAX_SOURCE_BYTES + MAX_INPUT_BYTES + 64 * 1024
_HEADER = struct.Struct(">I")
MAX_LOG_FIELDS = 8
_LOG_FIELD_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
RESERVED_LOG_FIELDS = frozenset({"time", "level", "logger", "message", "pid", "seat", "exception"})


class ProtocolError(Exception):
    """A malformed, oversized or truncated message."""


def send_message(sock: socket.socket, document: dict[str, Any]) -> None:
    payload = json.dumps(document, separators=(",", ":")).encode()
    sock.sendall(_HEADER.pack(len(payload)) + payload)


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        chunk = sock.recv(min(remaining, 1 << 20))
        if not chunk:
            raise ProtocolError("connection closed mid-message")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def recv_message(sock: socket.socket, max_bytes: int) -> dict[str, Any]:
    (size,) = _HEADER.unpack(_recv_exactly(sock, _HEADER.size))
    if size > max_bytes:
        raise ProtocolError(f"message of {size} bytes exceeds the {max_bytes}-byte cap")
    try:
        document = json.loads(_recv_exactly(sock, size))
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"message is not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise ProtocolError("message is not a JSON object")
    return document


@dataclass(frozen=True)
class JobRequest:
    source: str
    input_json: str  # kept serialised: the job parses it, the proxy never interprets it
    limits: Limits
    fresh_interpreter: bool = False  # benchmark baseline: exec a new python in the same jail
    without_torch: bool = False  # for the torch-less server, where torch does not exist ("by hand" parts)
    log_fields: Mapping[str, int | str] = field(default_factory=dict)  # e.g. submission_id, on the job's log lines

    def to_message(self) -> dict[str, Any]:
        return {
            "v": PROTOCOL_VERSION,
            "op": "run",
            "source": self.source,
            "input_json": self.input_json,
            "limits": self.limits.to_dict(),
            "fresh_interpreter": self.fresh_interpreter,
            **({"without_torch": True} if self.without_torch else {}),
            **({"log": dict(self.log_fields)} if self.log_fields else {}),
        }


def checked_log_fields(fields: Any) -> dict[str, int | str]:
    """A few short, named, plain values; ProtocolError otherwise (they end up in the server's log)."""
    if not isinstance(fields, Mapping) or len(fields) > MAX_LOG_FIELDS:
        raise ProtocolError(f"log fields must be an object of at most {MAX_LOG_FIELDS} entries")
    for name, value in fields.items():
        if not isinstance(name, str) or not _LOG_FIELD_NAME.fullmatch(name) or name in RESERVED_LOG_FIELDS:
            raise ProtocolError(f"log field name {str(name)[:40]!r} must be lower_case and not a reserved one")
        plain = isinstance(value, int) and not isinstance(value, bool) or isinstance(value, str) and len(value) <= 200
        if not plain:
            raise ProtocolError(f"log field {name} must be an integer or a short text")
    return dict(fields)


def parse_request(document: dict[str, Any]) -> JobRequest:
    """Validate a run request; raise ProtocolError naming the bad field."""
    if document.get("v") != PROTOCOL_VERSION or document.get("op") != "run":
        raise ProtocolError("unsupported protocol version or operation")
    source, input_json = document.get("source"), document.get("input_json")
    if not isinstance(source, str) or len(source.encode()) > MAX_SOURCE_BYTES:
        raise ProtocolError(f"source must be a string of at most {MAX_SOURCE_BYTES} bytes")
    if not isinstance(input_json, str) or len(input_json.encode()) > MAX_INPUT_BYTES:
        raise ProtocolError(f"input must serialise to at most {MAX_INPUT_BYTES} bytes")
    fresh, without_torch = document.get("fresh_interpreter", False), document.get("without_torch", False)
    if not isinstance(fresh, bool) or not isinstance(without_torch, bool):
        raise ProtocolError("fresh_interpreter and without_torch must be booleans")
    try:
        limits = Limits.from_dict(document.get("limits", {}))
    except (LimitsError, TypeError) as exc:
        raise ProtocolError(f"invalid limits: {exc}") from None
    return JobRequest(source=source, input_json=input_json, limits=limits, fresh_interpreter=fresh,
                      without_torch=without_torch, log_fields=checked_log_fields(document.get("log", {})))
