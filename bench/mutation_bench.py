"""The mutation model's cost on a 3-layer MLP written neuron by neuron (≥ 150 autograd nodes).

Side by side, in the same run:
  * today's analysis: the engine of the `main` branch (exported with `git archive`) analysing the
    same program — route contributions, a few catalogued local mistakes, counterfactual re-runs;
  * this branch: every mutation of every edge (catalogued and generic), the pairs, every
    counterfactual (kinks, accumulation beliefs, seeds).
Then a numeric answer is diagnosed from the Analysis JSON alone, in a process where importing
torch fails, and the p50/p95 per diagnosis is printed.

    .venv/bin/python bench/mutation_bench.py             # width 12, 3 timed analyses, 2000 diagnoses
    .venv/bin/python bench/mutation_bench.py --width 8 --runs 1
    .venv/bin/python bench/mutation_bench.py --curve 16,32,64 --baseline c38006c   # cost vs graph size

Each timed analysis starts, as a sandbox job does, from a heap whose objects the collector no longer
walks (`gc.freeze()` after the imports, as the zygote does before forking; `--plain-heap` to time it
without).

`--curve` analyses the MLP at each width with the baseline engine and this tree's, one after the
other, in `--rounds` interleaved rounds, and prints each one's seconds (the median round) and its ratio
to the smallest width's: the analysis should grow near-linearly with the graph (the 781-node graph
within 4x of the 205-node one).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

PROGRAM = """
x = torch.tensor(xs)
W1 = torch.tensor(w1, requires_grad=True)
b1 = torch.tensor(c1, requires_grad=True)
W2 = torch.tensor(w2, requires_grad=True)
b2 = torch.tensor(c2, requires_grad=True)
W3 = torch.tensor(w3, requires_grad=True)
h1 = torch.stack([torch.tanh((W1[i] * x).sum() + b1[i]) for i in range(len(c1))])
h2 = torch.stack([torch.relu((W2[j] * h1).sum() + b2[j]) for j in range(len(c2))])
y = (W3 * h2).sum()
L = (y - target) ** 2
L.backward()
"""


def params(width: int) -> dict[str, object]:
    def row(seed: int, size: int) -> list[float]:
        return [round(((seed * 37 + k * 11) % 17 - 8) / 10, 2) for k in range(size)]

    return {"xs": row(1, 4), "w1": [row(10 + i, 4) for i in range(width)], "c1": row(2, width),
            "w2": [row(40 + j, width) for j in range(width)], "c2": row(3, width), "w3": row(5, width),
            "target": 0.5}


TIMER = """
import gc, json, sys, time
sys.path.insert(0, {root!r})
import torch
torch.set_num_threads(1)
from chainrule import analyze_program
request = json.loads(sys.stdin.read())
analyze_program(**request)  # warm up
times, analysis = [], None
for _ in range({runs}):
    if {frozen}:  # as in the sandbox: a job is forked from a zygote whose heap is frozen (sandbox/warm.py)
        analysis = None
        gc.collect()
        gc.freeze()
    start = time.perf_counter()
    analysis = analyze_program(**request)
    times.append(time.perf_counter() - start)
start = time.perf_counter()
data = analysis.to_json()
stored = json.dumps(data)
storing = time.perf_counter() - start
print(json.dumps({{"seconds": sorted(times)[len(times) // 2], "nodes": len(data["graph"]["nodes"]),
                  "stored_mb": len(stored) / 1e6, "storing": storing,
                  "hypotheses": sum(len(items) for items in data["hypotheses"].values()),
                  "analysis": data if {keep} else None}}))
"""

DIAGNOSER = """
import json, sys, time
sys.modules["torch"] = None  # any import of torch now fails: the diagnosis must not need it
sys.path.insert(0, {root!r})
from chainrule.diagnosis.numeric import diagnose_numeric
from chainrule.model import Analysis
data = json.load(open({path!r}))
start = time.perf_counter()
analysis = Analysis.from_json(data)
load = time.perf_counter() - start
part = "W3.grad"
wrong = [h for h in analysis.hypotheses[part] if h.kind == "wrong_local_derivative"]
answer = wrong[len(wrong) // 2].value  # a wrong local derivative deep in the list
first = time.perf_counter()
verdict = diagnose_numeric(analysis=analysis, part=part, answer=answer)
first = time.perf_counter() - first
times = []
for _ in range({count}):
    start = time.perf_counter()
    verdict = diagnose_numeric(analysis=analysis, part=part, answer=answer)
    times.append(time.perf_counter() - start)
times.sort()
print(json.dumps({{"p50": times[len(times) // 2], "p95": times[int(len(times) * 0.95)], "first": first,
                  "load": load, "kind": verdict.kind, "edge": verdict.detail.get("edge"),
                  "torch_loaded": "torch" in sys.modules and sys.modules["torch"] is not None}}))
"""


def timed(root: Path, request: dict[str, Any], runs: int, keep: bool, frozen: bool) -> dict[str, Any]:
    script = TIMER.format(root=str(root), runs=runs, keep=keep, frozen=frozen)
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", script], input=json.dumps(request),
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=12)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--diagnoses", type=int, default=2000)
    parser.add_argument("--baseline", default="main", help="git revision of today's engine")
    parser.add_argument("--curve", default="", help="widths, comma-separated: the cost-vs-size curve")
    parser.add_argument("--rounds", type=int, default=3, help="--curve: interleaved rounds, the median kept")
    parser.add_argument("--plain-heap", action="store_true",
                        help="do not freeze the heap before each timed analysis (the sandbox's jobs start frozen)")
    args = parser.parse_args()
    frozen = not args.plain_heap
    if args.curve:
        curve([int(width) for width in args.curve.split(",")], args.runs, args.baseline, frozen, args.rounds)
        return
    request: dict[str, Any] = {"program": textwrap.dedent(PROGRAM), "params": params(args.width),
               "parts": ["W1.grad", "b1.grad", "W2.grad", "b2.grad", "W3.grad"]}
    with tempfile.TemporaryDirectory() as work:
        baseline_root = Path(work) / "baseline"
        baseline_root.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline, "chainrule"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(baseline_root)], input=archive, check=True)
        today = timed(baseline_root, request, args.runs, keep=False, frozen=frozen)
        mine = timed(ROOT, request, args.runs, keep=True, frozen=frozen)
        path = Path(work) / "analysis.json"
        path.write_text(json.dumps(mine["analysis"]))
        script = DIAGNOSER.format(root=str(ROOT), path=str(path), count=args.diagnoses)
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
        diagnosis = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"3-layer MLP, width {args.width}: {mine['nodes']} graph nodes")
    print(f"  today's analysis ({args.baseline}):   {today['seconds']:.3f} s, {today['hypotheses']} hypotheses")
    print(f"  with every mutation:       {mine['seconds']:.3f} s, {mine['hypotheses']} hypotheses "
          f"(ratio {mine['seconds'] / today['seconds']:.1f}x)")
    print(f"  numeric diagnosis without torch: p50 {diagnosis['p50'] * 1e3:.3f} ms, "
          f"p95 {diagnosis['p95'] * 1e3:.3f} ms (first call, building the index: {diagnosis['first'] * 1e3:.1f} ms; "
          f"Analysis.from_json: {diagnosis['load'] * 1e3:.1f} ms)")
    print(f"  diagnosed as {diagnosis['kind']} on {diagnosis['edge']}; torch loaded: {diagnosis['torch_loaded']}")


def curve(widths: list[int], runs: int, baseline: str, frozen: bool, rounds: int) -> None:
    """Each round analyses every width with both engines, one after the other; a width's figure is the
    median over the rounds, so a burst of load on the machine skews one round, not one width."""
    with tempfile.TemporaryDirectory() as work:
        baseline_root = Path(work) / "baseline"
        baseline_root.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", baseline, "chainrule"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(baseline_root)], input=archive, check=True)
        measured: dict[int, list[tuple[dict[str, Any], dict[str, Any]]]] = {width: [] for width in widths}
        for _ in range(rounds):
            for width in widths:
                request = {"program": textwrap.dedent(PROGRAM), "params": params(width),
                           "parts": ["W1.grad", "b1.grad", "W2.grad", "b2.grad", "W3.grad"]}
                measured[width].append((timed(baseline_root, request, runs, keep=False, frozen=frozen),
                                        timed(ROOT, request, runs, keep=False, frozen=frozen)))
    rows = [(width, _median_round([before for before, _ in measured[width]]),
             _median_round([now for _, now in measured[width]])) for width in widths]
    first_before, first_now = rows[0][1]["seconds"], rows[0][2]["seconds"]
    heap = "heap frozen before each, as in a sandbox job" if frozen else "plain heap"
    print(f"3-layer MLP analysis cost by graph size (median of {runs} per round, median of {rounds} interleaved "
          f"rounds, {heap}; ratio to the smallest graph)")
    print(f"  {'width':>5} {'nodes':>6} {'hypotheses':>10}   {baseline + ' (baseline)':>22}   {'this tree':>18}")
    for width, before, now in rows:
        print(f"  {width:>5} {now['nodes']:>6} {now['hypotheses']:>10}   "
              f"{before['seconds']:>8.3f} s ({before['seconds'] / first_before:>5.1f}x)   "
              f"{now['seconds']:>8.3f} s ({now['seconds'] / first_now:>5.1f}x)")
    if rounds > 1:
        print("  each round's ratio of the largest graph to the smallest, this tree: " + ", ".join(
            f"{measured[widths[-1]][index][1]['seconds'] / measured[widths[0]][index][1]['seconds']:.1f}x"
            for index in range(rounds)))
    print("the analysis document as stored (Analysis.to_json + json.dumps, once): size and time")
    for width, before, now in rows:
        print(f"  {width:>5} {now['nodes']:>6}   baseline {before['stored_mb']:>7.1f} MB {before['storing']:>6.2f} s"
              f"   this tree {now['stored_mb']:>7.1f} MB {now['storing']:>6.2f} s")


def _median_round(results: list[dict[str, Any]]) -> dict[str, Any]:
    return sorted(results, key=lambda result: result["seconds"])[len(results) // 2]


if __name__ == "__main__":
    main()
