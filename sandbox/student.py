"""The student process: forked by the seat's init *before* its job exists, then confined.

While it waits it holds nothing but the pristine zygote image. The proxy
writes the job (limits, source, input) into its pipe; it is the first process
of the seat to hold the job's code. It applies the limits, drops every
privilege and runs the code.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, NoReturn

from sandbox import confine, jail, warm
from sandbox.context import Seat, ServerContext
from sandbox.limits import Limits

EXIT_NO_JOB = 120  # the proxy closed the pipe without a job: nothing ran
EXIT_SETUP_FAILED = 121


def _report_failure(fd: int, message: str) -> NoReturn:
    try:
        os.write(fd, message[:3000].encode())
    except OSError:
        pass
    os._exit(EXIT_SETUP_FAILED)


def _read_job(fd: int) -> dict[str, Any] | None:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    os.close(fd)
    if not chunks:
        return None
    job = json.loads(b"".join(chunks))
    if not isinstance(job, dict) or not all(isinstance(job.get(k), str) for k in ("source", "input_json")):
        raise ValueError("malformed job")
    return job


def _exec_fresh_interpreter(job: dict[str, Any], limits: Limits, ctx: ServerContext) -> NoReturn:
    """A brand-new python in exactly the same jail: the benchmark baseline."""
    payload = {"source": job["source"], "input_json": job["input_json"],
               "result_fd": confine.RESULT_FD, "result_cap": limits.result_bytes}
    fd = os.memfd_create("job", 0)
    os.write(fd, json.dumps(payload).encode())
    os.lseek(fd, 0, os.SEEK_SET)
    block = "" if ctx.torch else "sys.modules['torch'] = None; "  # as in the torch-less zygote
    bootstrap = (f"import sys; sys.path.insert(0, {ctx.guest_dir!r}); {block}"
                 f"import sandbox_guest; sandbox_guest.run_from_fd({fd})")
    env = dict(os.environ)
    if ctx.root is not None:  # the interpreter's library is found through a host path (its runpath)
        env["LD_LIBRARY_PATH"] = os.path.join(os.path.dirname(os.path.dirname(ctx.python)), "lib")
    os.execve(ctx.python, [ctx.python, "-c", bootstrap], env)


def run_student(*, pipes: confine.JobPipes, seat: Seat, ctx: ServerContext, own_proc: bool = False) -> NoReturn:
    """Body of the student process; never returns. With `own_proc` (it is process 2 of a new PID
    namespace whose PID 1 is the small `job_init` program) it first mounts that namespace's /proc."""
    try:
        confine.wire_descriptors(pipes)
    except BaseException as exc:  # must not fall back into the init's code
        _report_failure(pipes.status, f"descriptors: {exc!r}")
    try:
        if own_proc:
            jail.job_proc()  # still root, before its job exists
        warm.touch_common_paths(with_torch=ctx.torch)  # take the copy-on-write faults now, while no job waits
        job = _read_job(confine.JOB_FD)
        if job is None:
            os._exit(EXIT_NO_JOB)
        limits = Limits.from_dict(job["limits"])
        if ctx.root is not None:
            jail.size_job_fs(limits)
        confine.lock_down(limits=limits, identity=seat.identity, data_base=ctx.data_base, seccomp=ctx.seccomp)
    except BaseException as exc:
        _report_failure(confine.SETUP_STATUS_FD, f"confinement: {exc!r}")
    if job.get("fresh"):
        _exec_fresh_interpreter(job, limits, ctx)
    guest = sys.modules["sandbox_guest"]
    os._exit(guest.run(job["source"], job["input_json"], confine.RESULT_FD, limits.result_bytes))
