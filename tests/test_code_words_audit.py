"""The words audit: nothing a code part's feedback says may be untrue of the student's program. Over every
code case of every corpus (tests/code_cases.py) and the typical mistakes of the shipped catalog's program
and fix parts, each message is checked against the student's source (tests/code_words.py): every line it
cites holds the construct its sentence names, and the text it quotes; every count of backward() calls is
the source's; every op it names is one the program has."""

from __future__ import annotations

import pytest

from tests.code_cases import CodeCase, corpus_code_cases, graded
from tests.code_words import untrue_words

LEAF = "x = torch.tensor([x0], requires_grad=True)\n"
W = "w = torch.tensor([w0], requires_grad=True)\n"

# The shipped catalog's program and fix parts, each with the mistakes students make in them.
CATALOG_MISTAKES: list[CodeCase] = [
    CodeCase("accumulation", "program", f"{LEAF}y = x**2\ny.backward()\n", {"mistake": "one call"}),
    CodeCase("accumulation", "program", f"{LEAF}y = x**2\ny.backward(retain_graph=True)\nx.grad.zero_()\n"
                                        "y.backward()\n", {"mistake": "zeroed between"}),
    CodeCase("accumulation", "program", f"{LEAF}y = x**2\ny.backward(retain_graph=True)\ny.backward()\n"
                                        "x.grad.zero_()\n", {"mistake": "zeroed after"}),
    CodeCase("accumulation", "program", f"{LEAF}y = x**2\nfor _ in range(3):\n    y.backward(retain_graph=True)\n",
             {"mistake": "three calls in a loop"}),
    CodeCase("accumulation", "program", f"{LEAF}y = x**2\n(y + y).backward()\n", {"mistake": "summed: a requirement"}),
    CodeCase("accumulation", "program", f"{LEAF}y = x**2\ny.backward()\nx.grad *= 2\n", {"mistake": "by hand"}),
    CodeCase("accumulation", "program", f"{LEAF}y = x**2\ny.backward()\ny.backward()\n", {"mistake": "graph freed"}),
    CodeCase("detach", "frozen", f"{LEAF}a = x**2\nb = a.clone()\nz = b * x\nz.backward()\n", {"mistake": "clone"}),
    CodeCase("detach", "frozen", f"{LEAF}a = x**2\nb = a\nz = b * x\nz.backward()\n", {"mistake": "no cut"}),
    CodeCase("detach", "frozen", f"{LEAF}a = x**2\na.detach()\nb = a\nz = b * x\nz.backward()\n",
             {"mistake": "detach thrown away"}),
    CodeCase("detach", "frozen", f"{LEAF}a = x**2\nb = a.detach()\nz = b * x.detach()\nz.backward()\n",
             {"mistake": "both cut"}),
    CodeCase("non-scalar", "seeded", "x = torch.tensor(xs, requires_grad=True)\ny = x**2\ny.sum().backward()\n"
                                      "x.grad *= 1\n", {"mistake": "by hand"}),
    CodeCase("non-scalar", "seeded", "x = torch.tensor(xs, requires_grad=True)\ny = x**2\n"
                                      "y.backward(2 * torch.tensor(seed))\n", {"mistake": "seed doubled"}),
    CodeCase("non-scalar", "seeded", "x = torch.tensor(xs, requires_grad=True)\ny = x**2\ny.mean().backward()\n",
             {"mistake": "mean for a seed"}),
    CodeCase("untracked-leaf", "fix", f"x = torch.tensor([x0], requires_grad=True)\n{W}z = w * x\nz.backward()\n",
             {"mistake": "x tracked"}),
    CodeCase("untracked-leaf", "fix", "x = torch.tensor([x0], requires_grad=False)\nw = torch.tensor([0.0], "
                                      "requires_grad=True)\nw = w + w0\nz = w * x\nz.backward()\n",
             {"mistake": "w no longer a leaf"}),
]
CASES = corpus_code_cases() + CATALOG_MISTAKES


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_the_feedback_says_nothing_untrue_of_the_students_program(case: CodeCase) -> None:
    diagnosis = graded(case)
    assert case.right or not diagnosis.correct, diagnosis.message
    assert untrue_words(diagnosis.message, case.source) == [], diagnosis.message


def test_the_audit_covers_every_corpus_and_the_catalog() -> None:
    slugs = {case.slug for case in CASES}
    assert {"accumulation", "detach", "non-scalar", "untracked-leaf"} <= slugs
    assert len([case for case in CASES if case.slug.startswith("code-")]) >= 40


SOURCE = f"{LEAF}y = x**2\ny.backward(retain_graph=True)\ny.backward()\n"


@pytest.mark.parametrize(("message", "untrue"), [
    ("Your program calls backward() once (line 3), but this exercise calls it twice.", "calls backward() once"),
    ("Line 2 (`y = x**2`) zeroes x.grad between the backward() calls.", "hold zeroes"),
    ("Line 3 (`y = x**3`) cuts the gradient.", "quotes line 3"),
    ("The backward() on line 2 freed the graph's saved values.", "hold backward("),
    ("Your x.grad uses 1 as the local derivative of div with respect to s (the edge sum → div).", "the op div"),
    ("Your x.grad has the sign of the path x → mul → y flipped.", "the op mul"),
    ("The graph stops at line 9.", "outside the program's 4 lines"),
])
def test_the_audit_catches_each_kind_of_untrue_word(message: str, untrue: str) -> None:
    """The checker is what the audit rests on: each untrue sentence here must be caught."""
    problems = untrue_words(message, SOURCE)
    assert any(untrue in problem for problem in problems), problems


def test_the_audit_passes_true_words() -> None:
    message = ("Your program calls backward() twice (lines 3 and 4). Line 3 (`y.backward(retain_graph=True)`) keeps "
               "the graph; the path x → pow → y counts once.")
    assert untrue_words(message, SOURCE) == []
