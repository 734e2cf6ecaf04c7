"""In a seat's init, once, inside the jail: the interpreter's record of where it loaded things from,
renamed to the jail's neutral paths (`/python`, `/venv`, `/packages/<name>`, `/guest`).

The zygote imported torch, the preloads and sandbox_guest from host paths before any seat existed,
and every student process inherits the init's memory: renaming sys.path, sys.prefix, each module's
file, path and spec here means a job neither reads the host's layout there nor loses the lazy imports
(a package's `__path__` now names where the jail has it). Code objects compiled in the zygote keep
the host file names in `co_filename`: sandbox_guest translates them in the tracebacks it prints.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import linecache
import sys
from typing import Any

from sandbox.jail import rename

_SYS_PATHS = ("prefix", "exec_prefix", "base_prefix", "base_exec_prefix", "executable", "_base_executable",
              "_stdlib_dir")


def rename_loaded(names: dict[str, str]) -> None:
    def new(value: Any) -> Any:
        return rename(value, names) if isinstance(value, str) else value

    sys.path[:] = list(dict.fromkeys(new(path) for path in sys.path))
    for attr in _SYS_PATHS:
        if isinstance(getattr(sys, attr, None), str):
            setattr(sys, attr, new(getattr(sys, attr)))
    sys.argv, sys.orig_argv = [""], [sys.executable]  # the server's command line named its sockets and dirs
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if isinstance(namespace, dict):
            _rename_module(namespace, new)
        if isinstance(getattr(module, "__file__", None), str) and "__file__" not in (namespace or {}):
            with contextlib.suppress(AttributeError, TypeError):  # a wrapper that forwards to its module
                module.__file__ = new(module.__file__)
    site = sys.modules.get("site")
    if site is not None and isinstance(getattr(site, "PREFIXES", None), list):
        site.PREFIXES[:] = [new(path) for path in site.PREFIXES]
    config = getattr(sys.modules.get("sysconfig"), "_CONFIG_VARS", None)
    if isinstance(config, dict):
        config.update({key: new(value) for key, value in config.items()})
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()
    linecache.clearcache()
    guest = sys.modules.get("sandbox_guest")
    if guest is not None:
        guest.rename_frames(names)


def _rename_module(namespace: dict[str, Any], new: Any) -> None:
    for key in ("__file__", "__cached__"):
        if isinstance(namespace.get(key), str):
            namespace[key] = new(namespace[key])
    path = namespace.get("__path__")
    if isinstance(path, list):  # a namespace package's _NamespacePath recomputes itself from sys.path
        path[:] = [new(entry) for entry in path]
    spec = namespace.get("__spec__")
    with contextlib.suppress(AttributeError, TypeError):
        if spec is not None:
            spec.origin = new(spec.origin)
            if isinstance(getattr(spec, "_cached", None), str):
                spec._cached = new(spec._cached)
            locations = spec.submodule_search_locations
            if isinstance(locations, list) and locations is not path:
                locations[:] = [new(entry) for entry in locations]
    loaders: list[Any] = [namespace.get("__loader__"), getattr(spec, "loader", None)]
    for loader in {id(x): x for x in loaders if x is not None and not isinstance(x, type)}.values():
        with contextlib.suppress(AttributeError, TypeError):
            if isinstance(getattr(loader, "path", None), str):
                loader.path = new(loader.path)


def blank_command_line() -> None:
    """Overwrite the process's argument area: /proc/self/cmdline of every job would show the server's
    command (the venv's python, the socket, the package directories)."""
    with open("/proc/self/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end (fields 48 and 49 of stat)
    if end > start:
        ctypes.memset(start, 0, end - start)
        ctypes.memmove(start, b"python", 6)
