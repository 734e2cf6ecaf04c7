"""What the autograd recorder (chainrule.analysis.program_trace) costs a program part's harness run.

    .venv/bin/python bench/trace_bench.py [--repeat N]

Runs the harness's points in-process (no sandbox and no fork: the recorder's own cost) on three
student programs at 6 evaluation points, with the recorder and with it switched off, and prints
each p50 and the ratio traced / untraced measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import chainrule.code.harness as harness

POINTS = [{"x0": 2.0 + i / 4} for i in range(6)]
PROGRAMS = {
    "accumulation seed": "x = torch.tensor([x0], requires_grad=True)\ny = x**2\ny.backward(retain_graph=True)\n"
                         "y.backward()\n",
    "training loop, 20 steps": "w = torch.tensor([0.5, -0.3], requires_grad=True)\n"
                               "opt = torch.optim.SGD([w], lr=0.1)\nfor step in range(20):\n    opt.zero_grad()\n"
                               "    loss = ((w * x0) ** 2).sum()\n    loss.backward()\n    opt.step()\n",
    "3-layer MLP, 10 steps": "torch.manual_seed(0)\nx = torch.randn(16, 8) * x0\n"
                             "layers = [torch.randn(8, 8, requires_grad=True) for _ in range(3)]\n"
                             "for step in range(10):\n    h = x\n    for w in layers:\n        h = torch.tanh(h @ w)\n"
                             "    loss = h.pow(2).mean()\n    for w in layers:\n        w.grad = None\n"
                             "    loss.backward()\n",
}
READS = {"accumulation seed": ["x.grad"], "training loop, 20 steps": ["w.grad"], "3-layer MLP, 10 steps": ["x"]}


def p50_ms(source: str, reads: list[str], repeat: int) -> float:
    request = harness._request({"mode": "program", "source": source, "reads": reads, "points": POINTS})
    code = harness._compiled(source)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        report = harness._run_points(request, code)
        times.append((time.perf_counter() - start) * 1000)
        assert all(not point.get("error") for point in report["points"]), report
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    traced_tracer = harness.program_tracer
    print(f"{'program (6 points)':<28}{'untraced p50':>14}{'traced p50':>12}{'ratio':>8}")
    for name, source in PROGRAMS.items():
        setattr(harness, "program_tracer", lambda request, namespace, **_: None)  # noqa: B010
        off = p50_ms(source, READS[name], args.repeat)
        setattr(harness, "program_tracer", traced_tracer)  # noqa: B010
        on = p50_ms(source, READS[name], args.repeat)
        print(f"{name:<28}{off:>12.1f}ms{on:>10.1f}ms{on / off:>8.2f}")


if __name__ == "__main__":
    main()
