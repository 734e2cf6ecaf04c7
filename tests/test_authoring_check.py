"""`load_assignments --check`: one `file: field: problem` line per reason, exit 1, nothing written."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from assignments.models import Assignment, Course
from authoring.vetting import assignment_vet
from catalog.spec import spec_from_file
from chainrule.evaluation_points import kink_sides
from grading.variants import variant_get, variant_points

pytestmark = pytest.mark.django_db

HEAD = 'title = "t"\nstatement = "s"\n'
XY = 'x = torch.tensor(x0, requires_grad=True)\ny = torch.tensor(y0, requires_grad=True)\n'

# file stem → (TOML body, the line --check must print). Each is a mistake an author really makes.
BAD = {
    "fails": (f'reference = """\n{XY}z = x * q\nz.backward()\n"""\n[params]\nx0 = 2.0\ny0 = 3.0\n'
              '[[parts]]\nkey = "x.grad"\n',
              "fails.toml: reference: fails at the seed point: NameError: name 'q' is not defined (program line 3)"),
    "no-tensor": (f'reference = """\n{XY}z = 3 * x**2 + 2 * y\nz.backward()\n"""\n[params]\nx0 = 1.5\ny0 = -0.5\n'
                  '[[parts]]\nkey = "w.grad"\n', "no-tensor.toml: parts.w: names no tensor of the reference program"),
    "zero": (f'reference = """\n{XY}z = 3 * x**2 + 2 * y\nz.backward()\n"""\n[params]\nx0 = 0.0\ny0 = 1.5\n'
             '[[parts]]\nkey = "x.grad"\n', "zero.toml: parts.x.grad: the answer 0 passes"),
    "own-value": ('reference = """\nx = torch.tensor(x0, requires_grad=True)\nz = x * x / 2\nz.backward()\n"""\n'
                  '[params]\nx0 = 3.0\n[[parts]]\nkey = "x.grad"\n',
                  "own-value.toml: parts.x.grad: the forward value of x passes"),
    "ambiguous": (f'reference = """\n{XY}a = x * y\nb = x**2\nz = a + b\nz.backward()\n"""\n[params]\nx0 = 2.0\n'
                  'y0 = 3.0\n[[parts]]\nkey = "x.grad"\n',
                  "ambiguous.toml: parts.x.grad: at the seed point the answer 4.0 is both missing path "
                  "x → mul → add → z and b's forward value"),
    "constant": ('reference = """\nx = torch.tensor(x0, requires_grad=True)\nz = x + 4\nz.backward()\n"""\n'
                 '[params]\nx0 = 2.0\n[[parts]]\nkey = "dz"\nkind = "symbolic"\n'
                 'config = { variables = { x = "x0" }, of = "x.grad" }\n',
                 "constant.toml: parts.dz: the constant formula 1 passes at every evaluation point"),
    "by-hand": (f'reference = """\n{XY}z = x * y + x**2\nz.backward()\n"""\n[params]\nx0 = 2.0\ny0 = 3.0\n'
                '[[parts]]\nkey = "g"\nkind = "code"\nconfig = { mode = "function", function = "g", '
                'args = ["x0", "y0"], returns = ["x.grad", "y.grad"] }\n',
                "by-hand.toml: parts.g: a solution that calls .backward() passes this by-hand part"),
    "seeded": ('reference = """\nx = torch.tensor(xs, requires_grad=True)\ny = x**2\ny.backward(torch.tensor(seed))\n'
               '"""\n[params]\nxs = [1.0, 2.0]\nseed = [1.0, 1.0]\n[[parts]]\nkey = "p"\nkind = "code"\n'
               'config = { mode = "program", reads = ["x.grad"], '
               'starter = "x = torch.tensor(xs, requires_grad=True)" }\n',
               "seeded.toml: parts.p: the default seed (ones) passes at every evaluation point"),
    # The points cross zero (mirrored draws) but never reach this shifted kink at x = -5.
    "one-side": ('reference = """\nx = torch.tensor([x0], requires_grad=True)\ny = torch.relu(x + 5) * 3\n'
                 'y.backward()\n"""\n[params]\nx0 = 1.5\n[[parts]]\nkey = "dy"\nkind = "symbolic"\n'
                 'config = { variables = { x = "x0" }, of = "x.grad", formula = "3*step(x + 5)" }\n',
                 "one-side.toml: parts.dy: the evaluation points keep the input of relu"),
    "kink": ('reference = """\nx = torch.tensor([x0], requires_grad=True)\ny = torch.relu(x) * 3\ny.backward()\n'
             '"""\n[params]\nx0 = 1.5\n[variants]\nx0 = { choices = [0.0] }\n[[parts]]\nkey = "x.grad"\n',
             "kink.toml: variants: a student variant (x0 = 0.0) puts the input of a ReLU-like node at its kink"),
    "infinite": ('reference = """\nx = torch.tensor(x0, requires_grad=True)\nz = torch.log(x)\nz.backward()\n"""\n'
                 '[params]\nx0 = 0.0\n[[parts]]\nkey = "x.grad"\n',
                 "infinite.toml: parts.x.grad: the reference gives a non-finite value at the seed point"),
    # A loose tolerance: leaving out the x·y path gives 4 where x.grad is 7, and abs_tol = 3.5 accepts it.
    "loose": (f'reference = """\n{XY}a = x * y\nb = x**2\nz = a + b\nz.backward()\n"""\n[params]\nx0 = 2.0\n'
              'y0 = 3.0\n[[parts]]\nkey = "x.grad"\nabs_tol = 3.5\n',
              "loose.toml: parts.x.grad: abs_tol = 3.5 lets a typical mistake pass as right: missing path "
              "x → mul → add → z gives 4 where the right answer is 7"),
    # A warning, not a refusal: x.grad = 0.00045387 rounded to 4 decimals (0.0005) is marked wrong.
    "tight": ('reference = """\nx = torch.tensor(x0, requires_grad=True)\nz = x**3\nz.backward()\n"""\n'
              '[params]\nx0 = 0.0123\n[[parts]]\nkey = "x.grad"\n',
              "tight.toml: parts.x.grad: warning: rel_tol = 0.0001, abs_tol = 1e-06 marks the right answer rounded "
              "to 4 decimals (0.0005) wrong"),
    "not-toml": ('reference = "unclosed\n', "not-toml.toml: file: is not valid TOML"),
    # Leaving out the tiny x·y path changes x.grad in the 5th significant digit: pasted from print()
    # (4 decimals, counted exact to them) the mistake would be marked right.
    "printed": (f'reference = """\n{XY}z = x**2 + 0.00005 * x * y\nz.backward()\n"""\n[params]\nx0 = 0.11553\n'
                'y0 = 0.6\n[[parts]]\nkey = "x.grad"\n',
                "printed.toml: parts.x.grad: missing path x → mul → mul → add → z prints as 0.2311, as the right "
                "answer does"),
}


def _check(*paths: Path) -> tuple[int, str]:
    out = StringIO()
    try:
        call_command("load_assignments", "--check", *map(str, paths), stdout=out)
    except CommandError as exc:
        return exc.returncode, out.getvalue()
    return 0, out.getvalue()


def test_check_refuses_each_kind_of_bad_file_with_its_reason_and_writes_nothing(tmp_path: Path) -> None:
    for stem, (body, _line) in BAD.items():
        (tmp_path / f"{stem}.toml").write_text(f'slug = "{stem}"\n{HEAD}{body}', encoding="utf-8")
    before = (Assignment.objects.count(), Course.objects.count())
    code, out = _check(tmp_path)
    assert code == 1
    lines = out.splitlines()
    for stem, (_body, expected) in BAD.items():
        assert any(line.startswith(expected) for line in lines), f"{stem}: {expected!r} not in\n{out}"
    assert all(line.split(": ", 2)[0].endswith(".toml") for line in lines)  # file: field: problem
    assert (Assignment.objects.count(), Course.objects.count()) == before


def test_a_warning_alone_does_not_refuse_the_file(tmp_path: Path) -> None:
    body, line = BAD["tight"]
    path = tmp_path / "tight.toml"
    path.write_text(f'slug = "tight"\n{HEAD}{body}', encoding="utf-8")
    code, out = _check(path)
    assert code == 0 and out.startswith(line) and out.endswith("1 file(s) pass\n")


def test_a_loose_tolerance_is_refused_at_publish_with_the_mistake_and_its_value(tmp_path: Path) -> None:
    """abs_tol = 0.2 on a gradient of -0.2546 published without a word, and the answer of a typical mistake
    (-0.0849) was then marked right."""
    body, _ = BAD["loose"]
    path = tmp_path / "loose.toml"
    path.write_text(f'slug = "loose-tolerance"\n{HEAD}{body}', encoding="utf-8")
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError):
        call_command("load_assignments", str(path), stdout=out, stderr=err)
    assert "gives 4 where the right answer is 7" in out.getvalue() + err.getvalue()
    assert not Assignment.objects.filter(slug="loose-tolerance", published=True).exists()


def test_an_accepted_reason_with_a_justification_passes(tmp_path: Path) -> None:
    body, _ = BAD["zero"]
    path = tmp_path / "zero.toml"
    path.write_text(f'slug = "zero"\n{HEAD}{body}[vetting.accept]\n"trivial-answer:parts.x.grad" = "warm-up"\n',
                    encoding="utf-8")
    assert _check(path) == (0, "1 file(s) pass\n")


def test_the_shipped_catalog_passes_and_each_acceptance_is_still_needed() -> None:
    """The by-hand parts forbid autograd, the seeded part varies its seed, and dead-relu's formula is tested on
    both sides of the kink (mirrored points), so `0` does not pass it; what vetting still finds is exactly what
    the files accept in writing, no stale acceptance."""
    catalog = Path(settings.GRADER_CATALOG_DIR)
    files = sorted(catalog.glob("*.toml"))
    assert _check(catalog) == (0, f"{len(files)} file(s) pass\n")
    for path in files:
        spec = spec_from_file(path)
        found = {reason.code for reason in assignment_vet(assignment=Assignment.objects.get(slug=spec.slug))
                 if not reason.warning}
        assert found == set(spec.accepted), path.name

    dead = Assignment.objects.get(slug="dead-relu")
    _points, analyses = variant_points(variant=variant_get(assignment=dead, params=dead.params))
    assert {side for analysis in analyses for (_node, _entry, side) in kink_sides(analysis)} == {True, False}
