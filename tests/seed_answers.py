"""Correct answers to every part of the ten seed assignments: numbers, formulas and code."""

from __future__ import annotations

NUMERIC: dict[str, dict[str, str]] = {
    "positive-gradient": {"x.grad": "7"},
    "negative-gradient": {"x.grad": "-8"},
    "dead-relu": {"x.grad": "0"},
    "multiple-paths": {"x.grad": "7"},
    "accumulation": {"x.grad": "8"},
    "detach": {"x.grad": "4"},
    "non-scalar": {"x.grad": "[2, 4, 6]"},
    "linear-layer": {"w.grad": "[1, 2]", "b.grad": "1"},
    "untracked-leaf": {"w.grad": "2", "x.grad": "None"},
    "visual-walkthrough": {"x.grad": "7", "y.grad": "2"},
}

FORMULAS: dict[str, dict[str, str]] = {
    "positive-gradient": {"dz_dx": "2x + 3"},
    "negative-gradient": {"dz_dx": "4 - 3x^2"},
    "dead-relu": {"dy_dx": "step(x)"},
    "visual-walkthrough": {"dz_dx": "y + 2*x"},
}

CODE: dict[str, dict[str, str]] = {
    "negative-gradient": {"grad_z": "def grad_z(x):\n    return 4 - 3 * x**2\n"},
    "accumulation": {"program": "x = torch.tensor([x0], requires_grad=True)\ny = x**2\n"
                                "y.backward(retain_graph=True)\ny.backward()\n"},
    "detach": {"frozen": "x = torch.tensor([x0], requires_grad=True)\na = x**2\nb = a.detach()\n"
                         "z = b * x\nz.backward()\n"},
    "non-scalar": {"seeded": "x = torch.tensor(xs, requires_grad=True)\ny = x**2\n"
                             "y.backward(torch.tensor(seed))\n"},
    "linear-layer": {"backward": "def linear_backward(x, w, b):\n    return x, torch.ones(1)\n"},
    "untracked-leaf": {"fix": "x = torch.tensor([x0])\nw = torch.tensor([w0], requires_grad=True)\n"
                              "z = w * x\nz.backward()\n"},
    "visual-walkthrough": {"grad_z": "def grad_z(x, y):\n    return y + 2 * x, x\n"},
}


CHOICES: dict[str, dict[str, str]] = {
    "positive-gradient": {"direction": "rising"},
    "negative-gradient": {"direction": "falling"},
    "multiple-paths": {"paths": '["x → mul → add → z (first factor)", "x → mul → add → z (second factor)", '
                                '"x → add → z"]'},
}


def answers_for(slug: str) -> dict[str, str]:
    """Numeric, formula and choice answers (the `answers` of a submission)."""
    return {**NUMERIC[slug], **FORMULAS.get(slug, {}), **CHOICES.get(slug, {})}


def code_for(slug: str) -> dict[str, str]:
    return dict(CODE.get(slug, {}))
