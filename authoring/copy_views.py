"""Copy a course into a new term from its page: a new slug and title, every date shifted by a number of
days or to a new start date, with the shifted dates previewed before anything is written."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from assignments.access import course_for_staff_or_404, may_create_courses
from assignments.models import Course
from authoring.course_copy import (
    MAX_SHIFT_DAYS,
    CourseCopyError,
    copy_shift,
    course_copy_by,
    course_start,
    dates_preview,
)

CREATORS_ONLY = "Only the people the site's operators name may create courses, copies included; ask them."


class CourseCopyForm(forms.Form):
    slug = forms.SlugField(max_length=50, label="New course slug",
                           help_text="Letters, digits, '-' and '_'; appears in addresses (e.g. autograd-2027s).")
    title = forms.CharField(max_length=200, required=False, label="New title",
                            help_text="Leave empty to keep this course's title.")
    shift_days = forms.IntegerField(min_value=-MAX_SHIFT_DAYS, max_value=MAX_SHIFT_DAYS, required=False,
                                    label="Shift every date by (days)", help_text="Negative moves dates earlier.")
    start = forms.DateField(required=False, label="…or move the first day to",
                            widget=forms.DateInput(attrs={"type": "date"}),
                            help_text="Every date moves by the days between the course's first day and this one.")


def _shift(form: CourseCopyForm, course: Course) -> timedelta | None:
    """The shift the valid form asks for, or None with the form's error set."""
    try:
        return copy_shift(course=course, days=form.cleaned_data["shift_days"], start=form.cleaned_data["start"])
    except CourseCopyError as exc:
        form.add_error(None, str(exc))
        return None


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def course_copy_page(request: HttpRequest, course: str) -> HttpResponse:
    found = course_for_staff_or_404(user=request.user, slug=course, authoring=True)  # a TA may not copy
    if not may_create_courses(user=request.user):
        return render(request, "staff/denied.html", {"reason": CREATORS_ONLY}, status=403)
    form = CourseCopyForm(request.POST if request.method == "POST" else None)
    shift = _shift(form, found) if form.is_valid() else None
    if shift is not None and "copy" in request.POST:
        try:
            copy = course_copy_by(user=request.user, source=found, slug=form.cleaned_data["slug"],
                                  title=form.cleaned_data["title"], shift=shift)
        except CourseCopyError as exc:
            form.add_error("slug", str(exc))
        else:
            left = f" Unpublished edits not copied: {', '.join(copy.drafts_dropped)}." if copy.drafts_dropped else ""
            messages.success(request, f"Copied {found.title} into {copy.course.slug}: {len(copy.slugs)} assignments, "
                                      f"{copy.staff} staff, dates shifted by {shift.days} days.{left}")
            return redirect("staff-course", course=copy.course.slug)
    status = 400 if request.method == "POST" and form.errors else 200
    shown = shift or timedelta(0)
    context = {"course": found, "form": form, "first_day": course_start(course=found), "shift_days": shown.days,
               "rows": dates_preview(course=found, shift=shown)}
    return render(request, "staff/course_copy.html", context, status=status)
