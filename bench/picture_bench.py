"""What the backward-flow picture costs: the reference analysis of a 3-layer scalar MLP
(≥ 150 nodes) with the flow recorder (one extra VJP per node, the op formulas) against the
same analysis without it, side by side in one run; then the SVG drawn from it.

    .venv/bin/python bench/picture_bench.py            # about 30 s
    .venv/bin/python bench/picture_bench.py --runs 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import chainrule.analysis.program as analysis_module
from chainrule import Disclosure, graph_svg
from chainrule.analysis.node_gradients import FlowRecorder

MLP = """
torch.manual_seed(0)
xs = [torch.tensor(v) for v in x0]
def neuron(inputs):
    s = torch.zeros((), requires_grad=True)
    for i in inputs:
        s = s + torch.randn((), requires_grad=True) * i
    return torch.tanh(s)
h1 = [neuron(xs) for _ in range(5)]
h2 = [neuron(h1) for _ in range(5)]
L = (neuron(h2) - 1.0) ** 2
L.backward()
"""
PARAMS = {"x0": [1.0, 2.0, 3.0]}


class _WithoutFlow(FlowRecorder):
    """The baseline: the inspector alone, as before the picture's data existed."""

    def __call__(self, run: Any, calls: Any, proceed: Callable[[], None]) -> None:
        self.inspector(run, calls, proceed)


def _analysis_seconds(recorder: type[FlowRecorder]) -> tuple[float, Any]:
    analysis_module.FlowRecorder = recorder  # type: ignore[misc]
    start = time.perf_counter()
    result = analysis_module.analyze_program(program=MLP, params=PARAMS, parts=[])
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    _analysis_seconds(FlowRecorder)  # warm up torch and the caches once
    timings: dict[str, list[float]] = {"with": [], "without": []}
    try:
        for _ in range(runs):  # interleaved, so load on the machine hits both alike
            seconds, analysis = _analysis_seconds(FlowRecorder)
            timings["with"].append(seconds)
            timings["without"].append(_analysis_seconds(_WithoutFlow)[0])
    finally:
        analysis_module.FlowRecorder = FlowRecorder  # type: ignore[misc]
    with_flow, without = statistics.median(timings["with"]), statistics.median(timings["without"])
    start = time.perf_counter()
    svg = graph_svg(analysis=analysis, disclosure=Disclosure(everything=True))
    drawn = time.perf_counter() - start
    print(f"graph: {len(analysis.graph.nodes)} nodes, {len(analysis.node_grads)} node gradients, "
          f"{len(analysis.edge_grads)} edge messages")
    print(f"analysis, median of {runs}: with the flow {with_flow:.3f} s, without {without:.3f} s, "
          f"ratio {with_flow / without:.2f}")
    print(f"SVG: {drawn:.3f} s, {len(svg) / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
