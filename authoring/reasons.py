"""A vetting reason: why publishing an assignment would grade students badly, with a stable `code` an
instructor accepts with a written justification (the publish page, or `[vetting] accept` in a catalog
file). Made by authoring/vetting.py (the reference's numbers) and authoring/policy_vetting.py (dates
and reveal settings)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Reason:
    code: str  # e.g. "trivial-answer:parts.dz_dx" — what an override names
    field: str
    problem: str

    def line(self, path: str) -> str:
        return f"{path}: {self.field}: {self.problem}"


def reasons_open(*, reasons: list[Reason], accepted: dict[str, str]) -> list[Reason]:
    """The reasons no written justification accepts."""
    return [reason for reason in reasons if not accepted.get(reason.code, "").strip()]
