"""The roster page and bulk enrolment by CSV (dry run first, then apply)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from assignments.access import course_for_staff_or_404, staff_courses
from courseops.invitations import InvitationReport, invitations_send, uninvited_students
from courseops.roster import RosterPlan, roster_apply, roster_members, roster_plan, roster_sections
from courseops.roster_csv import MAX_BYTES, RosterFileError

SHOWN = 1000


def _uploaded(request: HttpRequest) -> bytes:
    """The file of the first step, or the text the preview page posts back to apply it."""
    upload = request.FILES.get("file")
    if upload is not None:
        if upload.size and upload.size > MAX_BYTES:
            raise RosterFileError(f"The file is larger than {MAX_BYTES // 1000} kB.")
        return upload.read(MAX_BYTES + 1)
    return request.POST.get("csv", "").encode()[:MAX_BYTES + 1]


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def roster_page(request: HttpRequest, course: str) -> HttpResponse:
    found = course_for_staff_or_404(user=request.user, slug=course)
    can_enrol = staff_courses(user=request.user, authoring=True).filter(pk=found.pk).exists()
    context = {"course": found, "can_enrol": can_enrol, "search": request.GET.get("q", "")[:100],
               "section": request.GET.get("section", "")[:64], "sections": roster_sections(course=found)}
    status = 200
    if request.method == "POST":
        course_for_staff_or_404(user=request.user, slug=course, authoring=True)  # TAs: 403
        if request.POST.get("invite_waiting") == "1":  # students enrolled earlier who never set a password
            _invited_message(request, invitations_send(
                course=found, usernames=uninvited_students(course=found), inviter=request.user,
                base_url=request.build_absolute_uri("/").rstrip("/")))
            return redirect("courseops-roster", course=found.slug)
        try:
            data = _uploaded(request)
            invite = request.POST.get("invite") == "1"
            if request.POST.get("apply") == "1":
                plan = roster_apply(course=found, data=data, by=request.user)
                if not plan.errors:
                    messages.success(request, _applied_message(plan.counts))
                    if invite:
                        _invited_message(request, invitations_send(
                            course=found, usernames=_created(plan), inviter=request.user,
                            base_url=request.build_absolute_uri("/").rstrip("/")))
                    return redirect("courseops-roster", course=found.slug)
            else:
                plan = roster_plan(course=found, data=data, by=request.user)
            context.update(plan=plan, csv_text=data.decode("utf-8-sig", errors="replace"), invite=invite,
                           invitable=sum(1 for p in plan.lines if p.action == "create" and p.line.email),
                           created=sum(1 for p in plan.lines if p.action == "create"))
            status = 400 if plan.errors else 200
        except RosterFileError as exc:
            context["file_error"] = str(exc)
            status = 400
    if can_enrol:
        context["waiting"] = len(uninvited_students(course=found))
    members = roster_members(course=found, search=context["search"], section=context["section"])
    context.update(members=members[:SHOWN], total=members.count(), shown=SHOWN)
    return render(request, "staff/courseops/roster.html", context, status=status)


def _applied_message(counts: dict[str, int]) -> str:
    """"Enrolment done: 2 enrolled (2 with new accounts), 1 updated." — a new account is enrolled too."""
    def n(count: int, one: str, many: str) -> str:
        return f"{count} {one if count == 1 else many}"
    new, existing = counts.get("create", 0), counts.get("enrol", 0)
    parts = [f"{new + existing} enrolled ({n(new, 'with a new account', 'with new accounts')}, "
             f"{n(existing, 'with an existing account', 'with existing accounts')})"]
    if counts.get("update"):
        parts.append(f"{n(counts['update'], 'role or section', 'roles or sections')} changed")
    if counts.get("unchanged"):
        parts.append(f"{counts['unchanged']} already enrolled as listed")
    return f"Enrolment done: {'; '.join(parts)}."


def _created(plan: RosterPlan) -> list[str]:
    return [planned.line.username for planned in plan.lines if planned.action == "create"]


def _invited_message(request: HttpRequest, report: InvitationReport) -> None:
    if report.failed:
        messages.error(request, f"No invitation was sent: the mail server answered {report.failed[:200]!r}. "
                                "The accounts exist: once email works, they can ask for a link with “Forgot "
                                "your password, or never had one?” on the login page.")
        return
    text = f"Invitations sent to {len(report.sent)} account{'s' if len(report.sent) != 1 else ''}."
    if report.no_email:
        shown = ", ".join(report.no_email[:20]) + (" …" if len(report.no_email) > 20 else "")
        text += f" Not invited, no email address: {shown}."
    messages.success(request, text)
