"""A student who pastes what print(x.grad) shows (torch prints 4 decimals) is right: 0.1402 for
0.140244… is off by 3e-4 relative, beyond the default rel_tol of 1e-4, yet it is the value torch
printed. A mistake printed the same way is still named. Too few digits to tell is said as such."""

from __future__ import annotations

import torch

from chainrule import analyze_program, diagnose_numeric

SOFTMAX = """x = torch.tensor(x0, requires_grad=True)
e = torch.exp(x)
z = e / e.sum()
z[2].backward()
"""
SIGMOID = """x = torch.tensor(x0, requires_grad=True)
z = torch.sigmoid(x) * 3
z.backward()
"""


def _printed(values: list[float]) -> str:
    return str(torch.tensor(values))


def test_the_gradient_as_torch_prints_it_is_correct() -> None:
    analysis = analyze_program(program=SOFTMAX, params={"x0": [1.0, 2.0, 0.5]}, parts=["x.grad"])
    exact = analysis.parts["x.grad"].value
    shown = _printed(exact)  # tensor([-0.0327, -0.0889,  0.1216]): what the student copies
    typed = [float(n) for n in shown[shown.index("[") + 1: shown.index("]")].split(",")]
    strict = diagnose_numeric(analysis=analysis, part="x.grad", answer=typed, rel_tol=1e-4, abs_tol=1e-6)
    assert strict.correct, strict.message
    assert strict.message.endswith("to the 4 decimals you wrote.")


def test_a_mistake_pasted_from_torch_is_still_named_not_accepted() -> None:
    analysis = analyze_program(program=SIGMOID, params={"x0": 0.5}, parts=["x.grad"])
    sigma = 1 / (1 + 2.718281828459045 ** -0.5)
    slip = round(3 * sigma, 4)  # σ' taken as σ, printed: 1.8674
    diagnosis = diagnose_numeric(analysis=analysis, part="x.grad", answer=slip, rel_tol=1e-4, abs_tol=1e-6)
    assert not diagnosis.correct
    assert diagnosis.kind == "wrong_local_derivative", diagnosis.message


def test_a_small_gradient_with_few_significant_digits_is_not_accepted_but_told_why() -> None:
    analysis = analyze_program(program=SIGMOID.replace("* 3", "* 0.01"), params={"x0": 0.5}, parts=["x.grad"])
    exact = analysis.parts["x.grad"].value  # 0.00235…: 4 decimals keep 2 significant digits
    diagnosis = diagnose_numeric(analysis=analysis, part="x.grad", answer=round(exact, 4), rel_tol=1e-4,
                                 abs_tol=1e-6)
    assert not diagnosis.correct
    assert "only to the 4 decimals you wrote" in diagnosis.message
    assert "print(x.grad.tolist())" in diagnosis.message
    rounded_wrong = diagnose_numeric(analysis=analysis, part="x.grad", answer=round(exact, 4) + 0.0003,
                                     rel_tol=1e-4, abs_tol=1e-6)
    assert "decimals you wrote" not in rounded_wrong.message  # not the truth rounded: no such claim


def test_trailing_zeros_typed_count_as_decimals() -> None:
    """torch prints 0.20004 as tensor(0.2000): pasted, it was 'only to the 1 decimal you wrote'."""
    from chainrule.values import text_decimals

    analysis = analyze_program(program=SIGMOID.replace("torch.sigmoid(x) * 3", "x * 0.20004"), params={"x0": 0.5},
                               parts=["x.grad"])
    assert text_decimals("tensor(0.2000)") == [4] and text_decimals("[1.2345e-04, 2.]") == [8, 0]
    pasted = diagnose_numeric(analysis=analysis, part="x.grad", answer=0.2, rel_tol=1e-4, abs_tol=1e-6,
                              decimals=text_decimals("tensor(0.2000)"))
    assert pasted.correct, pasted.message


def test_a_tiny_entry_torch_would_print_in_scientific_form_gets_no_rounding() -> None:
    """[0.5123, 4e-05] prints as tensor([5.1230e-01, 4.0000e-05]); the leaky-ReLU-as-ReLU slip typed as
    [0.5123, 0.0000] was 'Correct … to the 4 decimals you wrote'."""
    program = ("x = torch.tensor(x0, requires_grad=True)\nw = torch.tensor(ws)\n"
               "z = (torch.nn.functional.leaky_relu(x, 0.01) * w).sum()\nz.backward()\n")
    analysis = analyze_program(program=program, params={"x0": [1.0, -2.0], "ws": [0.5123, 0.004]}, parts=["x.grad"])
    typed = "[0.5123, 0.0000]"
    from chainrule.values import text_decimals

    diagnosis = diagnose_numeric(analysis=analysis, part="x.grad", answer=[0.5123, 0.0], rel_tol=1e-4, abs_tol=1e-6,
                                 decimals=text_decimals(typed))
    assert not diagnosis.correct


def test_entries_one_off_in_their_last_printed_digit_are_not_what_torch_shows() -> None:
    """-log softmax(z)[0]'s gradient prints as tensor([-0.7688, 0.6285, 0.1402]); [-0.7689, 0.6286, 0.1403]
    passed, every entry within the tolerance plus half a unit of the 4th decimal, though torch never shows it."""
    program = "z = torch.tensor(z0, requires_grad=True)\nL = -torch.log(torch.softmax(z, dim=0)[0])\nL.backward()\n"
    analysis = analyze_program(program=program, params={"z0": [1.0, 2.0, 0.5]}, parts=["z.grad"])
    shown = [round(number, 4) for number in analysis.parts["z.grad"].value]  # type: ignore[union-attr]
    assert diagnose_numeric(analysis=analysis, part="z.grad", answer=shown, decimals=[4, 4, 4]).correct
    nudged = [number - 1e-4 if number < 0 else number + 1e-4 for number in shown]
    wrong = diagnose_numeric(analysis=analysis, part="z.grad", answer=nudged, decimals=[4, 4, 4])
    assert not wrong.correct
