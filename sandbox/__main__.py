"""Command line: `python -m sandbox serve|run|ping|status`.

    python -m sandbox serve --socket PATH [--slots N] [--uid-base N] [--preload MOD]... [--package-dir DIR]...
                            [--listen HOST:PORT --tls-ca CA --tls-cert CERT --tls-key KEY]
    python -m sandbox run FILE [--timeout S] [--cpu S] [--memory MB] [--input JSON] [--socket PATH] --json
    python -m sandbox ping [--socket PATH]
    python -m sandbox status [--socket PATH | tls://HOST:PORT --tls-ca CA --tls-cert CERT --tls-key KEY]

Exit status of `run`: 0 when the job produced a result document (whatever its
status), 2 for unreadable input or impossible limits, 3 when the sandbox failed.
"""

from __future__ import annotations

import argparse
import contextlib
import grp
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable

from sandbox.client import SandboxError, SandboxUnavailable, default_socket_path, ping, run_job, status
from sandbox.job_response import JobResult
from sandbox.limits import Limits, LimitsError, validate_limits
from sandbox.network import TlsFiles, client_context

_PYTHON_SET = {"LC_CTYPE"}  # set by the interpreter itself (PEP 538 locale coercion)
ONE_OFF_UID_BASE = 60900


def _ensure_empty_environment() -> None:
    """The zygote's memory reaches every job: start it over with nothing inherited."""
    if set(os.environ) - _PYTHON_SET:
        os.execve(sys.executable, [sys.executable, "-m", "sandbox", *sys.argv[1:]], {})


def _serve(args: argparse.Namespace) -> int:
    _ensure_empty_environment()
    from sandbox import server  # after the re-exec: keep the first process small
    from sandbox.backends import BackendUnavailable

    config = server.ServerConfig(
        socket_path=os.path.abspath(args.socket), slots=args.slots or server.default_slots(),
        uid_base=args.uid_base, preload=tuple(args.preload), package_dirs=tuple(args.package_dir),
        backend=args.backend, allow_insecure_dev_backend=args.allow_insecure_dev_backend,
        socket_mode=int(args.socket_mode, 8),
        socket_gid=grp.getgrnam(args.socket_group).gr_gid if args.socket_group else None,
    )
    listener = None
    try:
        if args.listen:  # forked now: the key never enters the zygote's memory, which every job inherits
            from sandbox import network

            listener = network.start_listener(args.listen, _tls_files(args), config.socket_path)
        return server.serve(config)
    except (BackendUnavailable, ValueError) as exc:
        print(f"sandbox: {exc}", file=sys.stderr)
        return 2
    finally:
        if listener is not None:
            with contextlib.suppress(OSError):
                os.kill(listener, signal.SIGTERM)
                os.waitpid(listener, 0)


def _tls_files(args: argparse.Namespace) -> TlsFiles:
    if not (args.tls_ca and args.tls_cert and args.tls_key):
        raise ValueError("a TLS endpoint needs --tls-ca, --tls-cert and --tls-key (deploy/make-secrets.sh makes them)")
    return TlsFiles(ca=args.tls_ca, cert=args.tls_cert, key=args.tls_key)


def _limits(args: argparse.Namespace) -> Limits:
    defaults = Limits()
    wall = args.timeout if args.timeout is not None else defaults.wall_seconds
    cpu = args.cpu if args.cpu is not None else (args.timeout if args.timeout is not None else defaults.cpu_seconds)
    memory = args.memory if args.memory is not None else defaults.memory_mb
    return validate_limits(Limits(wall_seconds=wall, cpu_seconds=cpu, memory_mb=memory))


def _one_off(args: argparse.Namespace, submit: Callable[[str], JobResult]) -> JobResult:
    from sandbox import server

    with tempfile.TemporaryDirectory(prefix="sandbox-cli-") as directory:
        socket_path = os.path.join(directory, "sandbox.sock")
        stderr = None if args.verbose else subprocess.DEVNULL
        with server.running_server(socket_path, slots=1, uid_base=args.uid_base, preload=tuple(args.preload),
                                   allow_insecure_dev_backend=args.allow_insecure_dev_backend, stderr=stderr):
            return submit(socket_path)


def _print_human(result: JobResult) -> None:
    print(f"status: {result.status} ({result.backend})")
    if result.error:
        print(f"error: {result.error}")
    for name in ("stdout", "stderr"):
        if getattr(result, name):
            print(f"--- {name}{' (truncated)' if getattr(result, name + '_truncated') else ''}")
            print(getattr(result, name), end="" if getattr(result, name).endswith("\n") else "\n")
    if result.result is not None:
        print(f"result: {json.dumps(result.result)}")


def _run(args: argparse.Namespace) -> int:
    try:
        with open(args.file, encoding="utf-8") as handle:
            source = handle.read()
        job_input = json.loads(args.input) if args.input is not None else None
        limits = _limits(args)
    except (OSError, UnicodeDecodeError, ValueError, LimitsError) as exc:
        print(f"sandbox: {exc}", file=sys.stderr)
        return 2

    def submit(socket_path: str) -> JobResult:
        return run_job(source=source, input=job_input, limits=limits, socket_path=socket_path,
                       allow_insecure_dev_backend=args.allow_insecure_dev_backend)

    socket_path = args.socket or default_socket_path()
    try:
        try:
            ping(socket_path=socket_path, timeout=2.0)
        except SandboxUnavailable:
            result = _one_off(args, submit)
        else:
            result = submit(socket_path)
    except SandboxError as exc:
        print(f"sandbox: {exc}", file=sys.stderr)
        return 3
    if args.json:
        print(result.to_json())
    else:
        _print_human(result)
    return 0


def _ping(args: argparse.Namespace) -> int:
    try:
        print(json.dumps(ping(socket_path=args.socket or default_socket_path())))
    except SandboxError as exc:
        print(f"sandbox: {exc}", file=sys.stderr)
        return 3
    return 0


def _status(args: argparse.Namespace) -> int:
    target = args.socket or default_socket_path()
    try:
        tls = client_context(_tls_files(args)) if target.startswith("tls://") else None
        print(json.dumps(status(socket_path=target, tls=tls)))
    except ValueError as exc:
        print(f"sandbox: {exc}", file=sys.stderr)
        return 2
    except SandboxError as exc:
        print(f"sandbox: {exc}", file=sys.stderr)
        return 3
    return 0


def _tls_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tls-ca", help="the deployment's CA certificate (PEM)")
    parser.add_argument("--tls-cert", help="this side's certificate, signed by that CA (PEM)")
    parser.add_argument("--tls-key", help="its private key (PEM)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m sandbox", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the sandbox server in the foreground")
    serve.add_argument("--socket", required=True)
    serve.add_argument("--slots", type=int, default=0, help="concurrent jobs (default: one per core)")
    serve.add_argument("--uid-base", type=int, default=60000, help="seat n runs as uid BASE+n (two seats per slot)")
    serve.add_argument("--preload", action="append", default=[], help="module the zygote imports")
    serve.add_argument("--package-dir", action="append", default=[], help="package exposed read-only")
    serve.add_argument("--backend", choices=("auto", "hardened", "insecure-dev"), default="auto")
    serve.add_argument("--allow-insecure-dev-backend", action="store_true")
    serve.add_argument("--socket-mode", default="600", help="octal permissions of the socket")
    serve.add_argument("--socket-group", help="group allowed to connect (with --socket-mode 660)")
    serve.add_argument("--listen", help="also take jobs over mutual TLS on HOST:PORT (needs the --tls-* files)")
    _tls_arguments(serve)
    serve.set_defaults(handler=_serve)
    run = commands.add_parser("run", help="run FILE in the sandbox and print its result")
    run.add_argument("file")
    run.add_argument("--timeout", type=float, help="wall-clock limit in seconds")
    run.add_argument("--cpu", type=float, help="CPU limit in seconds (default: the timeout)")
    run.add_argument("--memory", type=int, help="memory limit in MiB")
    run.add_argument("--input", help="JSON handed to the job (sandbox_guest.job_input())")
    run.add_argument("--socket", help="server socket (default: $SANDBOX_SOCKET or /run/sandbox/sandbox.sock)")
    run.add_argument("--json", action="store_true", help="print the result document as JSON")
    run.add_argument("--preload", action="append", default=[], help="for a one-off server")
    run.add_argument("--uid-base", type=int, default=ONE_OFF_UID_BASE, help="for a one-off server")
    run.add_argument("--allow-insecure-dev-backend", action="store_true")
    run.add_argument("--verbose", action="store_true", help="show a one-off server's log")
    run.set_defaults(handler=_run)
    ping_command = commands.add_parser("ping", help="check that a server answers")
    ping_command.add_argument("--socket")
    ping_command.set_defaults(handler=_ping)
    status_command = commands.add_parser("status", help="slots, busy, queued: answers while every slot is busy")
    status_command.add_argument("--socket", help="a unix socket path or tls://HOST:PORT")
    _tls_arguments(status_command)
    status_command.set_defaults(handler=_status)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
