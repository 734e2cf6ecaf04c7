"""The gradebook, its CSV exports (ours, Canvas's, Moodle's), and the drill-down to one student's submissions."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from assignments.access import course_for_staff_or_404
from assignments.models import Membership
from courseops.gradebook import EXPORTS, gradebook_read
from courseops.gradebook_html import gradebook_rows_html
from courseops.roster import roster_sections
from grader.models import Submission


def csv_response(text: str, filename: str) -> HttpResponse:
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
@require_safe
def gradebook_page(request: HttpRequest, course: str) -> HttpResponse:
    found = course_for_staff_or_404(user=request.user, slug=course)
    section, search = request.GET.get("section", "")[:64], request.GET.get("q", "")[:100]
    gradebook = gradebook_read(course=found, section=section, search=search)
    export = request.GET.get("format", "")
    if export in EXPORTS:  # csv, or the columns Canvas or Moodle import
        suffix = "" if export == "csv" else f"-{export}"
        return csv_response(EXPORTS[export](gradebook), f"{found.slug}-gradebook{suffix}.csv")
    return render(request, "staff/courseops/gradebook.html", {
        "course": found, "gradebook": gradebook, "section": section, "search": search,
        "sections": roster_sections(course=found),
        "columns": list(zip(gradebook.assignments, gradebook.max_scores, strict=True)),
        "rows_html": gradebook_rows_html(
            gradebook.rows, submission_base=reverse("courseops-submission", args=[0]).removesuffix("0/"),
            student_base=reverse("courseops-student", args=[found.slug, "x"]).removesuffix("x/")),
    })


@login_required
@require_safe
def student_page(request: HttpRequest, course: str, username: str) -> HttpResponse:
    """Every submission of one student in the course, newest first, each with its feedback."""
    found = course_for_staff_or_404(user=request.user, slug=course)
    student = get_user_model().objects.filter(username=username).first()
    member = Membership.objects.filter(course=found, user=student).first() if student else None
    if member is None:
        raise Http404("No such student in this course.")
    submissions = (Submission.objects.filter(student=student, assignment__course=found)
                   .select_related("assignment", "result").order_by("assignment__slug", "-created_at"))
    return render(request, "staff/courseops/student.html", {
        "course": found, "student": student, "member": member, "submissions": submissions[:500]})
