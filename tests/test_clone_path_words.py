"""A student who wrote clone() where the detach exercise freezes a copy reads clone, not detach, on
the Path line (the result document's paths) as in the message, through `manage.py grade` and the
real sandbox."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def test_a_clone_in_the_frozen_copy_is_named_clone_on_the_path_line(tmp_path: Path) -> None:
    code = tmp_path / "frozen.py"
    code.write_text("x = torch.tensor([x0], requires_grad=True)\na = x**2\nb = a.clone()\nz = b * x\nz.backward()\n")
    out = io.StringIO()
    call_command("grade", "detach", "--code-file", f"frozen={code}", "--json", stdout=out)
    diagnosis = next(part for part in json.loads(out.getvalue())["parts"] if part["part"] == "frozen")["diagnosis"]
    assert "clone" in diagnosis["message"]
    assert diagnosis["paths"] and all("detach" not in path for path in diagnosis["paths"]), diagnosis["paths"]
    assert any("clone" in path for path in diagnosis["paths"])
    assert diagnosis.get("cut_as") == "clone"
