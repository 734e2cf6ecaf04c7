"""The course roster: reading it for the roster page, and bulk enrolment from a CSV file.

Enrolment is planned first (the dry run the instructor reviews), then applied in one
transaction. Existing accounts keep their name and email: a course's file never edits the
account of someone enrolled elsewhere too.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, Q, QuerySet

from assignments.models import Course, Membership
from courseops.roster_csv import LineError, RosterLine, roster_parse


@dataclass(frozen=True)
class PlannedLine:
    line: RosterLine
    action: str  # "create" (new account), "enrol", "update" (role or section), "unchanged"
    before: str = ""  # role/section before, for "update"


@dataclass
class RosterPlan:
    lines: list[PlannedLine] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        return dict(Counter(planned.action for planned in self.lines))

    @property
    def can_apply(self) -> bool:
        return not self.errors and any(p.action != "unchanged" for p in self.lines)


def roster_plan(*, course: Course, data: bytes, by: AbstractBaseUser) -> RosterPlan:
    """What enrolling this file would do, line by line; writes nothing. Raises RosterFileError."""
    lines, errors = roster_parse(data)
    users = {u.username.lower(): u for u in get_user_model().objects.filter(
        username__in=[line.username for line in lines])}
    members = {m.user_id: m for m in Membership.objects.filter(course=course, user__in=list(users.values()))}
    plan = RosterPlan(errors=list(errors))
    for line in lines:
        user = users.get(line.username.lower())
        member = members.get(user.pk) if user else None
        if user is not None and user.pk == by.pk and member is not None and member.role != line.role:
            plan.errors.append(LineError(line.line, "you cannot change your own role"))
        elif user is None:
            plan.lines.append(PlannedLine(line, "create"))
        elif member is None:
            plan.lines.append(PlannedLine(line, "enrol"))
        elif (member.role, member.section) != (line.role, line.section):
            plan.lines.append(PlannedLine(line, "update", before=_change(member.role, member.section, line)))
        else:
            plan.lines.append(PlannedLine(line, "unchanged"))
    plan.errors.sort(key=lambda error: error.line)
    return plan


@transaction.atomic
def roster_apply(*, course: Course, data: bytes, by: AbstractBaseUser) -> RosterPlan:
    """Plans again (the file is re-read, never trusted from the preview) and, when it has no
    problems, creates the accounts and memberships. New accounts have no password: they log in
    through the LMS or a password reset."""
    plan = roster_plan(course=course, data=data, by=by)
    if plan.errors:
        return plan
    model = get_user_model()
    for planned in plan.lines:
        line = planned.line
        if planned.action == "create":
            first, _, last = line.name.partition(" ")
            user = model(username=line.username, email=line.email, first_name=first[:150], last_name=last[:150])
            user.set_unusable_password()
            user.save()
        else:
            user = model.objects.get(username__iexact=line.username)
        if planned.action != "unchanged":
            Membership.objects.update_or_create(user=user, course=course,
                                                defaults={"role": line.role, "section": line.section})
    return plan


def roster_members(*, course: Course, search: str = "", section: str = "") -> QuerySet[Membership]:
    """Everyone in the course by role, section and name, with how many submissions each made."""
    members = Membership.objects.filter(course=course).select_related("user").annotate(
        submitted=Count("user__submissions", filter=Q(user__submissions__assignment__course=course)))
    if search:
        members = members.filter(Q(user__username__icontains=search) | Q(user__first_name__icontains=search)
                                 | Q(user__last_name__icontains=search) | Q(user__email__icontains=search))
    if section:
        members = members.filter(section=section)
    return members.order_by("role", "section", "user__username")


def roster_sections(*, course: Course) -> list[tuple[str, int]]:
    """Each non-empty section with its number of students."""
    rows = (Membership.objects.filter(course=course, role=Membership.Role.STUDENT).exclude(section="")
            .values("section").annotate(n=Count("id")).order_by("section"))
    return [(row["section"], row["n"]) for row in rows]


def _change(role: str, section: str, line: Any) -> str:
    """What an update changes, in words: "role student → ta; section none → A" (it said "was student")."""
    changes = []
    if role != line.role:
        changes.append(f"role {role} → {line.role}")
    if section != line.section:
        changes.append(f"section {section or 'none'} → {line.section or 'none'}")
    return "; ".join(changes)
