"""Choosing the isolation backend and preparing what every job of it shares.

`hardened` needs Linux, root and working namespaces plus libseccomp. The
`insecure-dev` backend (rlimits only, for a laptop without namespaces) is
never chosen silently: it must be enabled explicitly, and every result says so.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import sys
import tempfile

from sandbox import jail, linux
from sandbox.context import HARDENED, INSECURE_DEV
from sandbox.warm import THREAD_VARIABLES

GUEST_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "guest")
_SYSTEM_LIBRARY_DIRS = ("/usr/lib", "/usr/lib64", "/usr/lib32", "/lib", "/lib64", "/lib32", "/usr/local/lib")
_LOCALE = "/usr/lib/locale/C.utf8"  # LANG=C.UTF-8 in every job
_PROBE_NAMESPACES = (linux.CLONE_NEWNS | linux.CLONE_NEWNET | linux.CLONE_NEWIPC
                     | linux.CLONE_NEWUTS | linux.CLONE_NEWPID | linux.CLONE_NEWCGROUP)


class BackendUnavailable(RuntimeError):
    """The requested isolation cannot be provided here; the message says what to do."""


def hardened_unavailable_reason() -> str | None:
    """None when namespaces, mounts and seccomp all work; else why not."""
    if not sys.platform.startswith("linux"):
        return f"namespaces need Linux (this is {sys.platform})"
    if os.geteuid() != 0:
        return "the hardened backend must run as root (it switches each job to a seat uid)"
    try:
        from sandbox.seccomp import build_filter  # libseccomp may be missing

        build_filter()
    except OSError as exc:
        return f"libseccomp is unavailable ({exc}); install the libseccomp2 package"
    pid = os.fork()
    if pid == 0:  # probe in a throw-away child: the namespaces die with it
        try:
            linux.unshare(_PROBE_NAMESPACES)
            linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
            linux.mount("tmpfs", tempfile.gettempdir(), "tmpfs", 0, "size=64k")
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return None if status == 0 else "creating namespaces or mounts failed (a container without CAP_SYS_ADMIN?)"


def choose_backend(requested: str, allow_insecure_dev_backend: bool) -> str:
    """`auto` means hardened when possible; the development backend only when explicitly allowed."""
    if requested not in ("auto", HARDENED, INSECURE_DEV):
        raise BackendUnavailable(f"unknown backend {requested!r}")
    reason = "it was requested" if requested == INSECURE_DEV else hardened_unavailable_reason()
    if reason is None:
        return HARDENED
    if requested == HARDENED:
        raise BackendUnavailable(f"the hardened sandbox is unavailable: {reason}")
    if not allow_insecure_dev_backend:
        raise BackendUnavailable(
            f"the hardened sandbox is unavailable ({reason}); the insecure development backend "
            "(rlimits only, no isolation) must be enabled explicitly with --allow-insecure-dev-backend"
        )
    return INSECURE_DEV


def check_seat_uids(uids: list[int]) -> None:
    """Refuse uids that exist on the host or run a process: a seat uid must be ours alone."""
    for uid in uids:
        try:
            name = pwd.getpwuid(uid).pw_name
        except KeyError:
            pass
        else:
            raise BackendUnavailable(f"seat uid {uid} belongs to user {name!r}; choose another --uid-base")
    owners = _process_uids()
    for pid, uid in owners.items():
        if uid in uids:
            raise BackendUnavailable(f"seat uid {uid} is in use by process {pid}; choose another --uid-base")


def claim_seat_uids(uids: list[int]) -> list[int]:
    """Hold an exclusive lock per uid for the server's lifetime: two servers never share one."""
    directory = "/run/sandbox-uids" if os.path.isdir("/run") else os.path.join(tempfile.gettempdir(), "sandbox-uids")
    os.makedirs(directory, mode=0o700, exist_ok=True)
    held: list[int] = []
    for uid in uids:
        fd = os.open(os.path.join(directory, f"{uid}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            for other in held:
                os.close(other)
            raise BackendUnavailable(
                f"seat uid {uid} is held by another sandbox server; choose another --uid-base") from None
        held.append(fd)
    check_seat_uids(uids)
    return held


def _process_uids() -> dict[int, int]:
    owners = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                owners[int(entry)] = os.stat(f"/proc/{entry}").st_uid
            except OSError:
                continue  # exited meanwhile
    return owners


def _is_within(path: str, ancestor: str) -> bool:
    return path == ancestor or path.startswith(ancestor.rstrip("/") + "/")


def allow_list(package_dirs: list[str]) -> list[str]:
    """The host paths a job may see (read-only): Python, the venv, listed packages, libraries."""
    paths = [os.path.realpath(sys.base_prefix), sys.prefix, *package_dirs, GUEST_DIR]
    paths += [_LOCALE] if os.path.isdir(_LOCALE) else []
    project = os.getcwd()
    for path in paths:
        real = os.path.realpath(path)
        if real == "/" or (project != "/" and _is_within(project, real)):
            raise BackendUnavailable(
                f"refusing to expose {path} to jobs: it contains the working directory {project} "
                "(the project directory holds the answer catalog)"
            )
    return paths


def validate_package_dir(path: str) -> str:
    path = os.path.abspath(path)
    if not os.path.isfile(os.path.join(path, "__init__.py")):
        raise BackendUnavailable(f"--package-dir {path} is not a Python package (no __init__.py)")
    return path


# Where the jail shows the interpreter, the venv, sandbox_guest and the listed packages: names that
# say nothing of the host's layout (where the checkout or the venv lives).
JAIL_PYTHON, JAIL_VENV, JAIL_GUEST, JAIL_PACKAGES = "/python", "/venv", "/guest", "/packages"


def site_packages() -> list[str]:
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return [path for path in (os.path.join(sys.prefix, "lib", version, "site-packages"),) if os.path.isdir(path)]


def jail_names(package_dirs: list[str]) -> dict[str, str]:
    """Host directory (real path) -> its neutral path in the jail. A listed package lies in
    /packages under its own name; the directory that holds it (on the zygote's sys.path) is
    /packages too, for the names of modules loaded from it."""
    names = {os.path.realpath(sys.base_prefix): JAIL_PYTHON, os.path.realpath(sys.prefix): JAIL_VENV,
             os.path.realpath(GUEST_DIR): JAIL_GUEST}
    tops = list(names)
    for path in map(os.path.realpath, package_dirs):
        if any(_is_within(path, top) for top in tops):
            continue  # seen through the venv or the interpreter already
        name = f"{JAIL_PACKAGES}/{os.path.basename(path)}"
        if names.get(path, name) != name or name in (v for k, v in names.items() if k != path):
            raise BackendUnavailable(f"two package directories are named {os.path.basename(path)}")
        names[path] = name
    return names


def host_path_names(names: dict[str, str], package_dirs: list[str]) -> dict[str, str]:
    """`names`, plus the directories holding the listed packages renamed /packages: for the
    strings (sys.path, module file names) of what the zygote loaded before any job."""
    parents = {os.path.dirname(host): JAIL_PACKAGES for host, jailed in names.items()
               if jailed.startswith(JAIL_PACKAGES + "/")}
    for path in map(os.path.abspath, package_dirs):  # as sys.path names them, perhaps through a symlink
        parents.setdefault(os.path.dirname(path), JAIL_PACKAGES)
    renamed = {**parents, **names, os.path.abspath(sys.prefix): JAIL_VENV}
    for path in filter(None, sys.path):  # the server's own directory (its modules are not in the jail)
        if not any(_is_within(os.path.abspath(path), host) for host in renamed):
            renamed[os.path.abspath(path)] = JAIL_PACKAGES
    return renamed


def job_environment(package_dirs: list[str], home: str = jail.WORK_DIR,
                    names: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment a job sees: nothing inherited, nothing secret; with `names` (the
    hardened backend), no host path either."""
    names = names or {}
    search_path = [os.path.dirname(jail.rename(os.path.realpath(path), names)) if names else os.path.dirname(path)
                   for path in package_dirs] + [names.get(os.path.realpath(GUEST_DIR), GUEST_DIR)]
    if names:  # a fresh interpreter is the jail's /python, not the venv's link to the host's
        search_path += [jail.rename(os.path.realpath(path), names) for path in site_packages()]
    prefix = names.get(os.path.realpath(sys.base_prefix), sys.prefix)
    return {
        "PATH": f"{prefix}/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "USER": "sandbox",
        "LOGNAME": "sandbox",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": os.pathsep.join(dict.fromkeys(search_path)),
        **THREAD_VARIABLES,
    }



def torch_dirs() -> tuple[str, ...]:
    """torch's package and its companions, as real paths, found without importing torch: what the
    torch-less server's root shows empty."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):  # blocked in sys.modules (the development backend's torch-less server)
        spec = None
    if spec is None or not spec.origin:
        return ()
    package = os.path.dirname(os.path.realpath(spec.origin))
    site = os.path.dirname(package)
    companions = [os.path.join(site, name) for name in ("functorch", "torchgen")]
    return tuple(path for path in [package, *companions] if os.path.isdir(path))


def test_dirs(package_dirs: list[str]) -> list[str]:
    """Every `tests` directory inside the exposed packages: jobs need none, and chainrule's holds
    the seed programs with their answers."""
    found = []
    for top in package_dirs:
        for directory, subdirs, _ in os.walk(top):
            found += [os.path.join(directory, name) for name in subdirs if name == "tests"]
            subdirs[:] = [name for name in subdirs if name not in ("tests", "__pycache__")]
    return found


def system_libraries() -> list[str]:
    """The system shared objects jobs need, as the paths the loader opens: what Python, its
    extension modules (lib-dynload), numpy and every object this (warm) process has mapped link
    against, by `ldd`. Not /usr/lib whole: no chromium, postgresql or jvm in the jail."""
    import glob
    import subprocess

    objects = {os.path.realpath(sys.executable)}
    with contextlib.suppress(OSError), open("/proc/self/maps") as maps:
        objects |= {line.split()[-1] for line in maps if ".so" in line.rsplit("/", 1)[-1]}
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    objects |= set(glob.glob(os.path.join(sys.base_prefix, "lib", version, "lib-dynload", "*.so")))
    for site in {sys.prefix, sys.base_prefix}:
        objects |= set(glob.glob(os.path.join(site, "lib", version, "site-packages", "numpy*", "**", "*.so*"),
                                 recursive=True))
    needed = {path for path in objects if _is_system_library(path)}
    listed = sorted(path for path in objects if os.path.isfile(path))
    for start in range(0, len(listed), 64):
        try:
            output = subprocess.run(["ldd", *listed[start:start + 64]], capture_output=True, text=True,
                                    timeout=60, env={"PATH": "/usr/bin:/bin"}).stdout
        except (OSError, subprocess.SubprocessError) as exc:
            raise BackendUnavailable(f"ldd failed ({exc}): cannot find the libraries jobs need") from None
        needed |= {word for word in output.split() if word.startswith("/") and _is_system_library(word)}
    return sorted(path for path in needed if os.path.exists(path))


def _is_system_library(path: str) -> bool:
    return any(_is_within(path, top) for top in _SYSTEM_LIBRARY_DIRS) and not path.endswith(":")
