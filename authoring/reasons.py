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
    warning: bool = False  # told, never blocks publishing (needs no justification)

    def line(self, path: str) -> str:
        return f"{path}: {self.field}: {'warning: ' if self.warning else ''}{self.problem}"


def reasons_open(*, reasons: list[Reason], accepted: dict[str, str]) -> list[Reason]:
    """The reasons that block publishing: every one no written justification accepts (warnings never do)."""
    return [reason for reason in reasons if not reason.warning and not accepted.get(reason.code, "").strip()]


def warnings_of(reasons: list[Reason]) -> list[Reason]:
    return [reason for reason in reasons if reason.warning]
