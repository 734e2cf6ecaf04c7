"""What the zygote prepares once and every job reuses: the server context and the slots."""

from __future__ import annotations

from dataclasses import dataclass, field

from sandbox.cgroups import SeatCgroup
from sandbox.confine import Identity
from sandbox.jail import RootPlan
from sandbox.job_response import HARDENED, INSECURE_DEV
from sandbox.seccomp import SeccompFilter

__all__ = ["HARDENED", "INSECURE_DEV", "ProxyContext", "Seat", "ServerContext"]


@dataclass(frozen=True)
class ProxyContext:
    """All a proxy knows of its server: it is forked from a process that has prepared nothing
    (sandbox/proxies.py). A ServerContext has the same fields."""

    backend: str
    torch: bool

@dataclass(frozen=True)
class ServerContext:
    backend: str  # HARDENED or INSECURE_DEV
    root: RootPlan | None  # None: no namespaces (development backend)
    seccomp: SeccompFilter | None
    data_base: int  # bytes of data segment the zygote hands down (RLIMIT_DATA baseline)
    job_env: dict[str, str]  # the complete environment a job sees
    python: str  # interpreter for the fresh-interpreter baseline
    guest_dir: str  # directory holding sandbox_guest.py
    torch: bool = True  # False in the torch-less server (sandbox/torchless.py)
    host_names: dict[str, str] = field(default_factory=dict)  # host directory -> its neutral path in the jail


@dataclass(frozen=True)
class Seat:
    """Where one job runs: its own uid and cgroup. A server has two seats per slot
    (per concurrent job): while one runs a job, the other is prepared for the next."""

    index: int
    identity: Identity
    cgroup: SeatCgroup | None
