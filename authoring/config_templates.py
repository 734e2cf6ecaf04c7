"""A starting `config` for each part kind (and each mode of a code part), its fields explained in TOML
comments: what the edit form offers when a part's kind is chosen, and what its help lists. Each one is a
valid config for an assignment whose parameters are x0 and y0 (tests/test_authoring_comfort.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConfigTemplate:
    kind: str
    title: str
    text: str  # TOML, comments included


TEMPLATES = (
    ConfigTemplate("numeric", "numeric: a number or tensor", "# A numeric part takes no config: the key names\n"
                   "# the gradient or tensor to answer (x.grad), compared within rel_tol and abs_tol.\n"),
    ConfigTemplate("symbolic", "symbolic: a formula", '''\
# The names students type in their formula, each standing for a parameter
variables = { x = "x0", y = "y0" }
# The gradient the formula must equal (checked at several points)
of = "x.grad"
# Optional: your own formula, checked against the reference when saved
formula = "y + 2*x"
'''),
    ConfigTemplate("choice", "choice: pick among options", '''\
# What students choose from (2 to 20 options)
options = ["rising", "falling", "flat"]
# The right option(s)
answer = ["rising"]
# true: students may tick several (then answer may list several)
multiple = false
# Optional: what a student who picks a wrong option is told
feedback = { falling = "Look at the sign of the gradient at x0." }
'''),
    ConfigTemplate("code", "code, function mode: write a function", '''\
mode = "function"
# The function students write, what it is passed (parameters, in order) and what it returns
function = "grad_z"
args = ["x0", "y0"]
returns = ["x.grad", "y.grad"]
# Shown to students
signature = "grad_z(x, y) -> (dz_dx, dz_dy)"
# "float" or "tensor": what the arguments are
arg_type = "float"
# Optional: refuse .backward() and torch.autograd (derive it by hand)
forbid_autograd = true
# What the code box starts with
starter = """
def grad_z(x, y):
    return 0.0, 0.0
"""
'''),
    ConfigTemplate("code", "code, program mode: complete a program", '''\
mode = "program"
# The gradients read after the student's program runs, compared with the reference's
reads = ["x.grad"]
# Optional: the parameters changed between runs (default: those the starter uses)
vary = ["x0"]
# Optional: a share of the points per right gradient (default: all or nothing)
partial = false
starter = """
x = torch.tensor(x0, requires_grad=True)
z = x ** 2
# call backward here
"""
'''),
    ConfigTemplate("code", "code, fix mode: repair a broken program", '''\
mode = "fix"
# Graded like program mode: the gradients read after the repaired program runs
reads = ["x.grad"]
# Only when the reference itself raises an error at every point (raising it is then the answer):
# reference_error = "RuntimeError"
# The broken program students fix
starter = """
x = torch.tensor(x0, requires_grad=True)
z = x ** 2
z.backward()
z.backward()
"""
'''),
)


def first_template(kind: str) -> str:
    """The template the form fills in when a part's kind is chosen ("" for a numeric part)."""
    return next((t.text for t in TEMPLATES if t.kind == kind and t.kind != "numeric"), "")
