"""Does a change to the engine change any analysis? This tree's reference analyses beside a baseline's.

Every catalog file under the given folders (by default the shipped catalog and the test corpora) is
analysed at its seed parameters, and the 3-layer MLP of `bench/mutation_bench.py` at two widths, once
with the engine of `--baseline` (exported with `git archive`) and once with this tree's, each in a
process of its own through `chainrule.analysis.cli.respond`, the entry point the sandbox runs. The
stored documents are compared entry by entry:

    .venv/bin/python bench/analysis_diff.py --baseline HEAD      # after editing the engine
    .venv/bin/python bench/analysis_diff.py --baseline HEAD~3 tests/corpus/assignments

It prints, per request, `same`, `numbers` (the same document but for numbers that differ by at most
--rtol, relative: sums taken in another order) or `DIFFERS` with the first places that differ, and
exits 1 when any request differs beyond numbers.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FOLDERS = ("assignments/catalog", "tests/catalog_extra", "tests/corpus/assignments",
           "tests/corpus_heldout/assignments", "tests/corpus_code/assignments")

WORKER = """
import json, sys
sys.path.insert(0, {root!r})
import torch
torch.set_num_threads(1)
from chainrule.analysis.cli import respond
for line in sys.stdin:
    reply, _ = respond(line)
    print(json.dumps(reply, sort_keys=True), flush=True)
"""


def requests(folders: list[str]) -> list[tuple[str, dict[str, Any]]]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")  # the catalog reader's checks
    os.environ.setdefault("SECRET_KEY", "bench-only-" + os.urandom(16).hex())  # nothing starts without one
    import django

    django.setup()
    from assignments.part_config import reference_keys
    from catalog.errors import CatalogError
    from catalog.spec import spec_from_file

    found = []
    for folder in folders:
        for path in sorted((ROOT / folder).glob("*.toml")):
            try:
                spec = spec_from_file(path)
            except CatalogError:
                continue  # a file the loader refuses is never analysed
            parts = reference_keys([(part.key, part.config) for part in spec.parts])
            if parts:
                found.append((f"{folder}/{path.name}",
                              {"program": spec.reference, "params": spec.params, "parts": parts}))
    from mutation_bench import PROGRAM, params  # the MLP written neuron by neuron

    for width in (4, 12):
        found.append((f"mlp width {width}", {"program": textwrap.dedent(PROGRAM), "params": params(width),
                                             "parts": ["W1.grad", "b1.grad", "W2.grad", "b2.grad", "W3.grad"]}))
    return found


def analysed(root: Path, jobs: list[dict[str, Any]]) -> list[Any]:
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", WORKER.format(root=str(root))],
                          input="".join(json.dumps(job) + "\n" for job in jobs), capture_output=True, text=True,
                          check=True, cwd=root)
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def differences(before: Any, after: Any, rtol: float, where: str = "") -> tuple[list[str], list[str]]:
    """(places that differ, places whose numbers differ within rtol)."""
    if isinstance(before, bool) or isinstance(after, bool) or not (
            isinstance(before, (int, float)) and isinstance(after, (int, float))):
        if isinstance(before, dict) and isinstance(after, dict):
            if before.keys() != after.keys():
                return [f"{where}: keys {sorted(before.keys() ^ after.keys())[:5]}"], []
            found: tuple[list[str], list[str]] = ([], [])
            for key in before:
                more = differences(before[key], after[key], rtol, f"{where}.{key}")
                found[0].extend(more[0])
                found[1].extend(more[1])
            return found
        if isinstance(before, list) and isinstance(after, list):
            if len(before) != len(after):
                return [f"{where}: {len(before)} items, now {len(after)}"], []
            found = ([], [])
            for index, (one, other) in enumerate(zip(before, after, strict=True)):
                more = differences(one, other, rtol, f"{where}[{index}]")
                found[0].extend(more[0])
                found[1].extend(more[1])
            return found
        return ([] if before == after else [f"{where}: {str(before)[:80]} → {str(after)[:80]}"]), []
    if before == after:
        return [], []
    close = math.isclose(before, after, rel_tol=rtol, abs_tol=rtol * 1e-6)
    return ([], [where]) if close else ([f"{where}: {before!r} → {after!r}"], [])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", default=list(FOLDERS))
    parser.add_argument("--baseline", default="HEAD", help="git revision of the engine to compare with")
    parser.add_argument("--rtol", type=float, default=1e-6)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "bench"))
    named = requests(args.folders)
    with tempfile.TemporaryDirectory() as work:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline, "chainrule"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", work], input=archive, check=True)
        before = analysed(Path(work), [job for _, job in named])
    after = analysed(ROOT, [job for _, job in named])
    differ = 0
    for (name, _), old, new in zip(named, before, after, strict=True):
        changed, close = differences(old, new, args.rtol)
        if changed:
            differ += 1
            print(f"DIFFERS  {name}: {len(changed)} places, first: " + "; ".join(changed[:3]))
        else:
            print(f"numbers  {name} ({len(close)} numbers within rtol)" if close else f"same     {name}")
    print(f"{len(named)} analyses: {len(named) - differ} the same, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
