"""The nine worked examples (cells A–I) and the visual walkthrough, written as
reference programs with their numbers injected as parameters."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from chainrule import Analysis, analyze_program
from chainrule.values import Value


@dataclass(frozen=True)
class Seed:
    program: str
    params: dict[str, Any]
    answers: dict[str, Value]

    @property
    def parts(self) -> list[str]:
        return list(self.answers)


SEEDS: dict[str, Seed] = {
    "positive-gradient": Seed(
        "x = torch.tensor([x0], requires_grad=True)\nz = x**2 + 3*x\nz.backward()\nprint(x.grad)\n",
        {"x0": 2.0},
        {"x.grad": 7.0},
    ),
    "negative-gradient": Seed(
        "x = torch.tensor([x0], requires_grad=True)\nz = 4*x - x**3\nz.backward()\nprint(x.grad)\n",
        {"x0": 2.0},
        {"x.grad": -8.0},
    ),
    "dead-relu": Seed(
        "x = torch.tensor([x0], requires_grad=True)\ny = torch.relu(x)\ny.backward()\nprint(x.grad)\n",
        {"x0": -1.5},
        {"x.grad": 0.0},
    ),
    "multiple-paths": Seed(
        "x = torch.tensor([x0], requires_grad=True)\nz = x*x + x\nz.backward()\nprint(x.grad)\n",
        {"x0": 3.0},
        {"x.grad": 7.0},
    ),
    "accumulation": Seed(
        "x = torch.tensor([x0], requires_grad=True)\ny = x**2\n"
        "y.backward(retain_graph=True)   # x.grad = 4\ny.backward()                    # x.grad = 8\n"
        "print(x.grad)\n",
        {"x0": 2.0},
        {"x.grad": 8.0},
    ),
    "detach": Seed(
        "x = torch.tensor([x0], requires_grad=True)\na = x**2\nb = a.detach()\nz = b * x\nz.backward()\n"
        "print(x.grad)\n",
        {"x0": 2.0},
        {"x.grad": 4.0},
    ),
    "non-scalar": Seed(
        "x = torch.tensor(xs, requires_grad=True)\ny = x**2\ny.backward(torch.tensor(v))\nprint(x.grad)\n",
        {"xs": [1.0, 2.0, 3.0], "v": [1.0, 1.0, 1.0]},
        {"x.grad": [2.0, 4.0, 6.0]},
    ),
    "linear-layer": Seed(
        "x = torch.tensor(xs)\nw = torch.tensor(ws, requires_grad=True)\n"
        "b = torch.tensor([b0], requires_grad=True)\nz = (w * x).sum() + b\nz.backward()\n"
        "print(w.grad)\nprint(b.grad)\n",
        {"xs": [1.0, 2.0], "ws": [0.5, -0.3], "b0": 0.1},
        {"w.grad": [1.0, 2.0], "b.grad": [1.0]},
    ),
    "untracked-leaf": Seed(
        "x = torch.tensor([x0], requires_grad=False)\nw = torch.tensor([w0], requires_grad=True)\n"
        "z = w * x\nz.backward()\nprint(w.grad)\nprint(x.grad)\n",
        {"x0": 2.0, "w0": 3.0},
        {"w.grad": [2.0], "x.grad": None},
    ),
    "visual-walkthrough": Seed(
        "x = torch.tensor([x0], requires_grad=True)\ny = torch.tensor([y0], requires_grad=True)\n"
        "a = x * y\nb = x**2\nz = a + b\nz.backward()\n",
        {"x0": 2.0, "y0": 3.0},
        {"x.grad": 7.0, "y.grad": 2.0},
    ),
}


@cache
def seed_analysis(slug: str) -> Analysis:
    seed = SEEDS[slug]
    return analyze_program(program=seed.program, params=seed.params, parts=seed.parts)
