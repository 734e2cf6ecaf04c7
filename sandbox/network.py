"""The sandbox over the network: endpoints, mutual TLS, and the listener a sandbox host runs.

An endpoint is `unix:///run/sandbox/sandbox.sock` (this host) or `tls://host:port` (a sandbox host).
Over TLS both sides prove who they are with certificates signed by the deployment's CA: the client
checks the server's certificate against that CA and the endpoint's host name, the server REQUIRES a
client certificate signed by the same CA (TLS 1.2 at least). Nobody without a certificate of the
deployment can send a job, and a worker never hands a student's code to an impostor.

`serve_listener()` is the network side of `python -m sandbox serve --listen HOST:PORT`: a process of
its own, forked before the zygote is prepared, that holds the private key (the zygote's memory, which
every job inherits, never sees it). Per connection it completes the handshake, reads the one request,
and passes it to the server's unix socket (or its torch-less sibling's) and the answer back, bytes
unchanged. `ping` and `status` it answers from the server's status socket, which the zygote's accept
loop answers even while every slot is busy. When the unix socket refuses, it answers
`{"failure": ..., "not_started": true}`: the job certainly did not start, so a client may try another
host.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import ssl
import struct
import sys
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from sandbox.protocol import MAX_REQUEST_BYTES, PROTOCOL_VERSION, ProtocolError, recv_message, send_message

log = logging.getLogger("sandbox")
STATUS_SUFFIX = ".status"  # the zygote answers a connection there with its status, unread
TORCHLESS_SUFFIX = ".torchless"  # the torch-less server's socket beside the main one (sandbox/torchless.py)
CONNECT_SECONDS = 5.0  # TCP connect plus TLS handshake; past it the endpoint counts as down
HANDSHAKE_SECONDS = 10.0  # the listener's bound on a client's handshake and request
_RELAY_CHUNK = 1 << 16
MAX_CONNECTIONS = 512  # open at once (handshaking, waiting for a slot, running); past it new ones are closed
_NETLINK_SOCK_DIAG, _SOCK_DIAG_BY_FAMILY, _TCP_LISTEN, _UDIAG_SHOW_RQLEN, _UNIX_DIAG_RQLEN = 4, 20, 10, 0x10, 4


class EndpointError(ValueError):
    """An endpoint or a TLS file the configuration names is unusable."""


class NotStarted(OSError):
    """The job certainly did not start there (refused, timed out or failed TLS before the request was sent)."""


@dataclass(frozen=True)
class Endpoint:
    url: str
    path: str = ""  # unix
    host: str = ""  # tls
    port: int = 0

    @property
    def is_tls(self) -> bool:
        return bool(self.host)

    def __str__(self) -> str:
        return self.url


def parse_endpoint(text: str) -> Endpoint:
    """`unix:///abs/path`, a bare socket path, or `tls://host:port`; EndpointError otherwise."""
    text = text.strip()
    if text and "://" not in text:
        return Endpoint(f"unix://{text}", path=text)
    parts = urlsplit(text)
    if parts.scheme == "unix" and parts.path.startswith("/") and not parts.netloc:
        return Endpoint(text, path=parts.path)
    if parts.scheme == "tls" and parts.hostname and not parts.path.strip("/"):
        try:
            port = parts.port
        except ValueError:
            port = None
        if port:
            return Endpoint(text, host=parts.hostname, port=port)
    raise EndpointError(f"sandbox endpoint {text[:200]!r} must be unix:///absolute/path or tls://host:port")


def parse_endpoints(text: str) -> list[Endpoint]:
    """A comma- or space-separated list, in order, without repeats."""
    endpoints = [parse_endpoint(item) for item in text.replace(",", " ").split()]
    return list({endpoint.url: endpoint for endpoint in endpoints}.values())


@dataclass(frozen=True)
class TlsFiles:
    ca: str  # the deployment's CA certificate (PEM)
    cert: str  # this side's certificate (PEM), signed by that CA
    key: str  # its private key (PEM)


def _load(context: ssl.SSLContext, files: TlsFiles) -> ssl.SSLContext:
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.verify_mode = ssl.CERT_REQUIRED
    try:
        context.load_verify_locations(cafile=files.ca)
        context.load_cert_chain(files.cert, files.key)
    except (OSError, ssl.SSLError) as exc:
        raise EndpointError(f"TLS files (CA {files.ca}, certificate {files.cert}, key {files.key}) "
                            f"unusable: {exc}") from None
    return context


def client_context(files: TlsFiles) -> ssl.SSLContext:
    """Verifies the server against the CA and the endpoint's name; presents our certificate."""
    context = _load(ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT), files)
    context.check_hostname = True
    return context


def server_context(files: TlsFiles) -> ssl.SSLContext:
    """Requires a client certificate signed by the CA."""
    return _load(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), files)


def connect(endpoint: Endpoint, tls: ssl.SSLContext | None, timeout: float) -> socket.socket:
    """A connected (and, over TLS, authenticated) socket; NotStarted when that fails."""
    sock: socket.socket | None = None
    try:
        if not endpoint.is_tls:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            sock.connect(endpoint.path)
            return sock
        if tls is None:
            raise NotStarted(f"{endpoint} needs the deployment's TLS files (SANDBOX_TLS_CA, _CERT, _KEY)")
        sock = socket.create_connection((endpoint.host, endpoint.port), timeout=min(timeout, CONNECT_SECONDS))
        secure = tls.wrap_socket(sock, server_hostname=endpoint.host)  # handshakes; raises on a bad peer
        secure.settimeout(timeout)
        return secure
    except NotStarted:
        raise
    except (OSError, ssl.SSLError) as exc:  # refused, unreachable, timed out, certificate refused
        if sock is not None:
            sock.close()
        raise NotStarted(f"{endpoint}: {exc}") from None


def _unix_exchange(path: str, document: dict[str, Any], timeout: float, max_bytes: int) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        if document:
            send_message(sock, document)
        return recv_message(sock, max_bytes)


def read_status(socket_path: str, timeout: float = 2.0) -> dict[str, Any]:
    """The server's status (slots, busy, queued, backend, version): from the zygote's accept loop, so it
    answers while every slot is busy. OSError or ProtocolError when the server is away."""
    return _unix_exchange(socket_path + STATUS_SUFFIX, {}, timeout, 4096)


def accept_queue_length(listener: socket.socket) -> int | None:
    """Connections waiting in a listening unix socket's backlog (Linux sock_diag); None where unknown."""
    request = struct.pack("=BBHIIIII", socket.AF_UNIX, 0, 0, 1 << _TCP_LISTEN, os.fstat(listener.fileno()).st_ino,
                          _UDIAG_SHOW_RQLEN, 0xFFFFFFFF, 0xFFFFFFFF)
    header = struct.pack("=IHHII", 16 + len(request), _SOCK_DIAG_BY_FAMILY, 1, 1, 0)  # NLM_F_REQUEST
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as netlink:
            netlink.settimeout(1.0)
            netlink.sendto(header + request, (0, 0))
            data = netlink.recv(65536)
    except (OSError, AttributeError):
        return None
    length, kind = struct.unpack_from("=IH", data)
    offset = 32  # netlink header, then struct unix_diag_msg
    while kind == _SOCK_DIAG_BY_FAMILY and offset + 4 <= min(length, len(data)):
        size, attribute = struct.unpack_from("=HH", data, offset)
        if attribute == _UNIX_DIAG_RQLEN:
            return int(struct.unpack_from("=I", data, offset + 4)[0])
        offset += max(4, (size + 3) & ~3)
    return None


# --- the listener on a sandbox host ----------------------------------------------------------


@dataclass
class Listener:
    sock: socket.socket
    tls: ssl.SSLContext
    socket_path: str
    in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def serve_forever(self) -> None:
        places = threading.BoundedSemaphore(MAX_CONNECTIONS)
        while True:
            conn, peer = self.sock.accept()
            if not places.acquire(blocking=False):  # a flood of idle connections holds no more threads
                conn.close()
                continue
            threading.Thread(target=self._handle, args=(conn, peer, places), daemon=True).start()

    def _handle(self, conn: socket.socket, peer: Any, places: threading.BoundedSemaphore) -> None:
        try:
            conn.settimeout(HANDSHAKE_SECONDS)
            with self.tls.wrap_socket(conn, server_side=True) as secure:
                document = recv_message(secure, MAX_REQUEST_BYTES)
                self._answer(secure, document)
        except (OSError, ssl.SSLError, ProtocolError) as exc:
            log.info("network client %s: %s", peer[0] if peer else "?", exc)
        finally:
            conn.close()
            places.release()

    def _answer(self, secure: ssl.SSLSocket, document: dict[str, Any]) -> None:
        if document.get("op") in ("ping", "status"):
            send_message(secure, self._status_answer(document["op"]))
            return
        path = self.socket_path + (TORCHLESS_SUFFIX if document.get("without_torch") is True else "")
        try:
            local = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            local.connect(path)
        except OSError as exc:
            local.close()
            send_message(secure, {"v": PROTOCOL_VERSION, "failure": f"sandbox server not running: {exc}",
                                  "not_started": True})
            return
        with local, self._counted():
            send_message(local, document)
            secure.settimeout(None)
            while chunk := local.recv(_RELAY_CHUNK):  # the answer, unread; the server caps it
                secure.sendall(chunk)

    @contextlib.contextmanager
    def _counted(self) -> Any:
        with self.lock:
            self.in_flight += 1
        try:
            yield
        finally:
            with self.lock:
                self.in_flight -= 1

    def _status_answer(self, op: str) -> dict[str, Any]:
        try:
            status = read_status(self.socket_path)
        except (OSError, ProtocolError) as exc:
            return {"v": PROTOCOL_VERSION, "failure": f"sandbox server not running: {exc}", "not_started": True}
        if op == "ping":
            return {"v": PROTOCOL_VERSION, "op": "pong", "backend": status.get("backend")}
        return {**status, "relayed": self.in_flight}


def bind(address: str) -> socket.socket:
    """A listening TCP socket on `HOST:PORT` (`[::]:PORT` for IPv6)."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"
    if not port.isdigit():
        raise EndpointError(f"--listen {address!r} must be HOST:PORT")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, int(port)))
    except OSError as exc:
        sock.close()
        raise EndpointError(f"cannot listen on {address}: {exc.strerror}") from None
    sock.listen(128)
    return sock


def start_listener(address: str, files: TlsFiles, socket_path: str) -> int:
    """Bind, then fork the listener process; return its pid. The key is read in the child only, and the
    child dies with the server (PDEATHSIG). EndpointError when the port or the TLS files are unusable."""
    from sandbox import linux, logs

    sock = bind(address)  # threads are started in the child only: the server must stay single-threaded
    read, write = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        code = 2
        try:
            os.close(read)
            linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGTERM)  # ends when the server goes
            if os.getppid() != parent:
                os._exit(code)
            logs.configure(sys.stderr)
            context = server_context(files)
            os.write(write, b"R")
            os.close(write)
            Listener(sock, context, socket_path).serve_forever()
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.write(write, f"E{exc}".encode()[:2000])
        finally:
            os._exit(code)
    os.close(write)
    sock.close()
    with os.fdopen(read, "rb") as pipe:
        message = pipe.read(2000)
    if message != b"R":
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        raise EndpointError(message[1:].decode(errors="replace") or "the network listener did not start")
    return pid
