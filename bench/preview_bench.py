"""Edit → preview ready, over the seed assignments, beside a cold run of the same reference.

    .venv/bin/python bench/preview_bench.py [-k 5]

"Edit" changes a parameter value (so no cached analysis can answer) and renders exactly what
the preview page computes: the staged working copy, the reference run in the warm sandbox,
paths, the feedback space and the graph picture (graphviz). The baseline, measured in the same
run, is a cold run of the same reference: a fresh `python -m chainrule.analyze` (SubprocessRunner).
Goal (issue 10): preview p50 <= 300 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GOAL_MS = 300.0


def setup(workdir: Path) -> None:
    os.environ.update({"DATABASE_URL": f"sqlite:///{workdir / 'bench.sqlite3'}",
                       "DJANGO_SETTINGS_MODULE": "config.settings", "SANDBOX_SOCKET": str(workdir / "sandbox.sock")})
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def edited(data: dict[str, Any], step: int) -> dict[str, Any]:
    """The catalog with its first float parameter nudged: a new variant every time."""
    params = dict(data["params"])
    for name, value in params.items():
        if isinstance(value, float):
            params[name] = round(value + 0.001 * (step + 1), 6)
            break
        if isinstance(value, list) and value and isinstance(value[0], float):
            params[name] = [round(value[0] + 0.001 * (step + 1), 6), *value[1:]]
            break
    return {**data, "params": params}


def preview_ms(assignment: Any, data: dict[str, Any]) -> float:
    from assignments.authoring import staged
    from assignments.preview import preview_build

    start = time.perf_counter()
    preview = staged(assignment=assignment, data=data,
                     work=lambda row: preview_build(assignment=row, answers={}, code={}))
    elapsed = (time.perf_counter() - start) * 1000
    if preview.error:
        raise SystemExit(f"{assignment.slug}: preview failed: {preview.error}")
    return elapsed


def cold_ms(assignment: Any, data: dict[str, Any]) -> float:
    from assignments.part_config import reference_keys
    from grader.reference import SubprocessRunner

    keys = reference_keys([(p.key, p.kind, p.config) for p in assignment.parts.all()])
    start = time.perf_counter()
    SubprocessRunner().analyze(program=assignment.reference_program, params=data["params"], parts=keys)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", type=int, default=5, help="edits per seed assignment")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="preview-bench-") as tmp:
        setup(Path(tmp))
        from django.conf import settings
        from django.core.management import call_command

        from grader.reference import SANDBOX_PRELOAD
        from sandbox.launch import spawn_server, stop_server

        server = spawn_server(settings.SANDBOX_SOCKET, preload=SANDBOX_PRELOAD,
                              package_dirs=(str(ROOT / "chainrule"),), uid_base=62900)
        try:
            call_command("load_assignments", verbosity=0)
            previews, colds = run(args.k)
        finally:
            stop_server(server)
    p50, cold = statistics.median(previews), statistics.median(colds)
    print(f"edit → preview ready p50 {p50:6.0f} ms  (p95 {sorted(previews)[int(0.95 * (len(previews) - 1))]:.0f} ms,"
          f" n={len(previews)})   cold reference run p50 {cold:6.0f} ms (n={len(colds)})   "
          f"ratio {cold / p50:.1f}× faster   goal <= {GOAL_MS:.0f} ms: {'met' if p50 <= GOAL_MS else 'NOT met'}")


def run(k: int) -> tuple[list[float], list[float]]:
    from assignments.authoring import working_catalog
    from assignments.models import Assignment

    previews: list[float] = []
    colds: list[float] = []
    for assignment in Assignment.objects.order_by("slug"):
        data = working_catalog(assignment=assignment)
        preview_ms(assignment, edited(data, -1))  # first use of this assignment's code paths
        times = [preview_ms(assignment, edited(data, step)) for step in range(k)]
        cold = cold_ms(assignment, edited(data, k))
        previews += times
        colds.append(cold)
        print(f"  {assignment.slug:20s} preview p50 {statistics.median(times):6.0f} ms   cold run {cold:6.0f} ms")
    return previews, colds


if __name__ == "__main__":
    main()
