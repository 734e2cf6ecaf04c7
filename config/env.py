"""Typed readers for environment variables (the only source of configuration).

Any variable may instead name a file holding its value: `SECRET_KEY_FILE=/run/secrets/secret_key`
(Docker and Kubernetes secrets are mounted as files, so the value never sits in the environment or in
a compose file). The file's content, without its final newline, is the value; setting both the
variable and its `_FILE` is refused as ambiguous."""

from __future__ import annotations

import os
import tempfile

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _raw(name: str) -> str | None:
    """The variable's value, from the environment or from the file `<name>_FILE` names."""
    path = os.environ.get(f"{name}_FILE")
    if path is None:
        return os.environ.get(name)
    if name in os.environ:
        raise ImproperlyConfigured(f"set {name} or {name}_FILE, not both")
    try:
        with open(path, encoding="utf-8") as secret:
            return secret.read().removesuffix("\n")
    except OSError as exc:
        raise ImproperlyConfigured(f"{name}_FILE={path} cannot be read ({exc.strerror})") from None


def envstr(name: str, default: str) -> str:
    raw = _raw(name)
    return default if raw is None else raw


def envbool(name: str, default: bool) -> bool:
    raw = _raw(name)
    if raw is None:
        return default
    if raw.strip().lower() in _TRUE:
        return True
    if raw.strip().lower() in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {raw!r}")


def envint(name: str, default: int) -> int:
    raw = _raw(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None


def envfloat(name: str, default: float) -> float:
    raw = _raw(name)
    if raw is None:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None


def envfile(name: str) -> str | None:
    """A path for a library that reads a file (a TLS key): `<name>_FILE=path` is used as it is (a mounted
    secret), `<name>=<content>` is written once to a private (0600) temporary file; None when neither."""
    path = os.environ.get(f"{name}_FILE")
    if path is not None:
        if name in os.environ:
            raise ImproperlyConfigured(f"set {name} or {name}_FILE, not both")
        if not os.access(path, os.R_OK):
            raise ImproperlyConfigured(f"{name}_FILE={path} cannot be read")
        return path
    content = os.environ.get(name)
    if not content:
        return None
    handle, path = tempfile.mkstemp(prefix=f"{name.lower()}-")  # mode 0600
    with os.fdopen(handle, "w", encoding="utf-8") as copy:
        copy.write(content if content.endswith("\n") else content + "\n")
    return path
