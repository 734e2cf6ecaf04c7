"""Prepare the zygote's interpreter once: pinned threads, torch imported and warm, then frozen.

Forking is only safe from a single-threaded process (a child inherits the
memory of every thread but only the forking thread itself), so thread pools
are pinned to one thread *before* torch is imported and the zygote checks
before every fork that no thread has appeared since.
"""

from __future__ import annotations

import ctypes
import gc
import importlib
import json
import logging
import os
import signal
import sys
import threading
import types

THREAD_VARIABLES = {
    name: "1"
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                 "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "BLIS_NUM_THREADS")
}
log = logging.getLogger("sandbox")
_HUGE_PAGE = 2 * 1024 * 1024
_MADV_HUGEPAGE = 14
_MADV_COLLAPSE = 25

_WARM_UP = """
import torch
x = torch.tensor([2.0], requires_grad=True)
z = x ** 2 + 3 * x
z.backward()
w = torch.randn(4, 3, requires_grad=True)
y = torch.nn.functional.softplus(w @ w.T).sin().exp().mean()
y.backward()
assert float(x.grad) == 7.0
"""


# Only the common core: every page touched here is also freed when the process exits.
_STUDENT_WARM_UP = """
import torch
x = torch.tensor([2.0], requires_grad=True)
(x ** 2 + 3 * x).backward()
x.grad.item()
"""


class NotSingleThreaded(RuntimeError):
    pass


def reset_signals_after_fork() -> None:
    """A forked child of the zygote starts with default dispositions and no wake-up fd."""
    signal.set_wakeup_fd(-1)
    for number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
        signal.signal(number, signal.SIG_DFL)


def thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()  # no /proc (development backend on macOS)


def assert_single_threaded() -> None:
    count = max(thread_count(), threading.active_count())
    if count != 1:
        raise NotSingleThreaded(f"the zygote has {count} threads; forking it is unsafe")


def import_torch() -> types.ModuleType:
    os.environ.update(THREAD_VARIABLES)
    import torch  # must follow the thread variables

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    return torch


def warm_up(preload: tuple[str, ...], *, with_torch: bool = True) -> list[types.ModuleType]:
    """Import torch and the preloaded modules and run a small single-threaded autograd job.

    Without torch (the torch-less server): torch is blocked in sys.modules for good, and a preloaded
    module that needs it is left out (its package is still exposed; jobs import what they use)."""
    if with_torch:
        import_torch()
    else:
        os.environ.update(THREAD_VARIABLES)
        sys.modules["torch"] = None  # type: ignore[assignment]  # what `import torch` refuses
    modules = []
    for name in preload:
        try:
            modules.append(importlib.import_module(name))
        except ImportError as exc:
            if with_torch:
                raise
            log.info("torch-less server: %s not preloaded (%s)", name, exc)
    if with_torch:
        exec(compile(_WARM_UP, "<zygote warm-up>", "exec"), {"__name__": "__warm_up__"})  # noqa: S102 - our own code
    assert_single_threaded()
    return modules


def touch_common_paths(*, with_torch: bool = True) -> None:
    """Run what nearly every job runs, in a process forked for the next job before it arrives.

    A forked process pays a copy-on-write fault on the first write to each
    inherited page (reference counts make even reads write); ~300 of them for
    the seed example, about 2-3 ms. Doing it ahead takes them off the job's path.
    """
    if with_torch:
        exec(compile(_STUDENT_WARM_UP, "<student warm-up>", "exec"), {"__name__": "__warm_up__"})  # noqa: S102
    json.loads(json.dumps({"warm": [1.0, "up"]}))


def freeze_heap() -> None:
    """Make forking cheap: no GC traversal of inherited objects, and huge pages for the heap."""
    gc.collect()
    gc.freeze()  # inherited objects are never touched by the children's collector
    if sys.platform.startswith("linux"):
        _collapse_anonymous_memory()


def _collapse_anonymous_memory() -> None:
    """fork() copies one page-table entry per 4 KiB page; torch leaves ~150 MiB of heap.
    Collapsing it into 2 MiB pages cut fork+exit from ~9 ms to ~3 ms on the target host."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    with open("/proc/self/maps") as maps:
        regions = [line.split() for line in maps]
    for fields in regions:
        if "w" not in fields[1] or (len(fields) > 5 and not fields[5] == "[heap]"):
            continue  # file-backed, stack, vdso: not ours to collapse
        start, end = (int(value, 16) for value in fields[0].split("-"))
        start = -(-start // _HUGE_PAGE) * _HUGE_PAGE
        end = end // _HUGE_PAGE * _HUGE_PAGE
        if end > start:
            libc.madvise(start, end - start, _MADV_HUGEPAGE)  # khugepaged keeps it collapsed
            libc.madvise(start, end - start, _MADV_COLLAPSE)  # best effort: needs Linux 6.1


def data_segment_bytes() -> int:
    """VmData now: what RLIMIT_DATA must leave room for on top of the job's own budget."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0
