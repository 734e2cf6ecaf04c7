"""Authoring pages for a course's instructors. Thin: parse the forms, call one service, render."""

from __future__ import annotations

import re
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from assignments.access import assignment_for_staff_or_404, course_for_staff_or_404, may_create_courses
from assignments.models import AuthoringJob, Course
from authoring import publishing
from authoring.config_templates import TEMPLATES
from authoring.forms import AssignmentForm, PartFormSet, catalog_from_forms, catalog_json, initial_from_catalog
from authoring.job_views import job_context
from authoring.jobs import JobRefused, job_request
from catalog.errors import CatalogError
from catalog.export import assignment_toml, course_files, files_zip
from catalog.uploads import uploaded_files


def _forms(request: HttpRequest, *, slug_fixed: bool, data: dict[str, Any] | None) -> tuple[Any, Any]:
    if request.method == "POST":
        return (AssignmentForm(request.POST, slug_fixed=slug_fixed, initial=_fixed_slug(data)),
                PartFormSet(request.POST, prefix="parts"))
    initial, parts = initial_from_catalog(data) if data else ({}, [])
    return AssignmentForm(initial=initial, slug_fixed=slug_fixed), PartFormSet(initial=parts, prefix="parts")


def _fixed_slug(data: dict[str, Any] | None) -> dict[str, Any]:
    return {"slug": data["slug"]} if data else {}


def _catalog_or_errors(form: Any, parts: Any) -> dict[str, Any] | None:
    if not (form.is_valid() and parts.is_valid()):
        return None
    try:
        return catalog_from_forms(form=form, parts=parts)
    except CatalogError as exc:
        form.add_error(None, f"{exc.field}: {exc.problem}")
        return None


def _editor(request: HttpRequest, template: str, context: dict[str, Any], status: int = 200) -> HttpResponse:
    return render(request, template, {**context, "config_templates": TEMPLATES}, status=status)


COURSE_SLUG_MAX = Course._meta.get_field("slug").max_length or 50
COURSE_TITLE_MAX = Course._meta.get_field("title").max_length or 200
COURSE_SLUG = re.compile(rf"[a-z0-9-]{{1,{COURSE_SLUG_MAX}}}")
CREATORS_ONLY = "Only the people the site's operators name may create courses; ask them to create yours."

@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def course_create(request: HttpRequest) -> HttpResponse:
    if not may_create_courses(user=request.user):
        return render(request, "staff/denied.html", {"reason": CREATORS_ONLY}, status=403)
    error = ""
    if request.method == "POST":
        slug, title = request.POST.get("slug", "").strip().lower(), request.POST.get("title", "").strip()
        # ASCII only and within the columns: `ａｂ` passed isalnum() and broke the redirect (500).
        if not COURSE_SLUG.fullmatch(slug) or not title or len(title) > COURSE_TITLE_MAX \
                or Course.objects.filter(slug=slug).exists():
            error = (f"Give a title of at most {COURSE_TITLE_MAX} characters and an unused slug of at most "
                     f"{COURSE_SLUG_MAX} lowercase letters, digits and '-'.")
        else:
            try:
                course = publishing.course_create(user=request.user, slug=slug, title=title)
            except publishing.SlugTaken:
                error = f"The slug {slug!r} is taken; choose another."
            else:
                return redirect("staff-course", course=course.slug)
    return render(request, "staff/course_new.html", {"error": error}, status=400 if error else 200)


@login_required
@require_POST
def course_feedback(request: HttpRequest, course: str) -> HttpResponse:
    found = course_for_staff_or_404(user=request.user, slug=course, authoring=True)
    try:
        publishing.course_release_set(course=found, release_before=request.POST.get("release_before", ""),
                                      release_after=request.POST.get("release_after", ""))
        messages.success(request, "Feedback levels saved: assignments without their own follow them now.")
    except ValueError as exc:
        messages.error(request, str(exc))
    return redirect("staff-course", course=found.slug)


@login_required
@require_POST
def course_staff(request: HttpRequest, course: str) -> HttpResponse:
    found = course_for_staff_or_404(user=request.user, slug=course, authoring=True)
    try:
        membership = publishing.staff_add(course=found, username=request.POST.get("username", "").strip(),
                                         role=request.POST.get("role", ""))
        messages.success(request, f"{membership.user} is now {membership.role} in {found.title}.")
    except ValueError as exc:
        messages.error(request, str(exc))
    return redirect("staff-course", course=found.slug)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def assignment_create(request: HttpRequest, course: str) -> HttpResponse:
    found = course_for_staff_or_404(user=request.user, slug=course, authoring=True)
    form, parts = _forms(request, slug_fixed=False, data=None)
    if request.method == "POST" and (data := _catalog_or_errors(form, parts)) is not None:
        try:
            assignment = publishing.assignment_create(course=found, data=data)
        except CatalogError as exc:
            form.add_error(None, f"{exc.field}: {exc.problem}")
        else:
            messages.success(request, "Created as a draft: preview it, then publish.")
            return redirect("staff-assignment-edit", slug=assignment.slug)
    status = 400 if request.method == "POST" else 200
    return _editor(request, "staff/assignment_edit.html", {"course": found, "form": form, "parts": parts,
                                                            "assignment": None}, status)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def assignment_edit(request: HttpRequest, slug: str) -> HttpResponse:
    assignment = assignment_for_staff_or_404(user=request.user, slug=slug, authoring=True)
    form, parts = _forms(request, slug_fixed=True, data=publishing.working_catalog(assignment=assignment))
    if request.method == "POST" and (data := _catalog_or_errors(form, parts)) is not None:
        try:
            publishing.assignment_save(assignment=assignment, data=data)
        except CatalogError as exc:
            form.add_error(None, f"{exc.field}: {exc.problem}")
        else:
            messages.success(request, "Saved." if not assignment.published else
                             "Saved as a draft: students keep the published version until you publish.")
            return redirect("staff-assignment-edit", slug=assignment.slug)
    status = 400 if request.method == "POST" else 200
    context = {"course": assignment.course, "form": form, "parts": parts, "assignment": assignment,
               "versions": assignment.versions.all()[:20]}
    return _editor(request, "staff/assignment_edit.html", context, status)


@login_required
@require_POST
def assignment_preview(request: HttpRequest, slug: str) -> HttpResponse:
    """Queue a preview of the form as it is now (unsaved edits included), with a trial answer; the
    fragment returned polls until a worker has run it (the reference never runs in this request)."""
    assignment = assignment_for_staff_or_404(user=request.user, slug=slug, authoring=True)
    form, parts = AssignmentForm(request.POST, slug_fixed=True, initial={"slug": slug}), \
        PartFormSet(request.POST, prefix="parts")
    data = _catalog_or_errors(form, parts)
    if data is None:
        return render(request, "staff/_preview.html", {"form_errors": _error_lines(form, parts)}, status=400)
    try:
        publishing.spec_for(assignment=assignment, data=data)  # form errors now, not after a worker's round trip
    except CatalogError as exc:
        return render(request, "staff/_preview.html", {"form_errors": [f"{exc.field}: {exc.problem}"]}, status=400)
    answers = {k[6:]: v for k, v in request.POST.items() if k.startswith("trial:") and v.strip()}
    code = {k[5:]: v for k, v in request.POST.items() if k.startswith("code:") and v.strip()}
    assert assignment.course is not None
    try:
        job = job_request(kind=AuthoringJob.Kind.PREVIEW, course=assignment.course, user=request.user,
                          assignment=assignment,
                          payload={"data": catalog_json(data), "answers": answers, "code": code})
    except JobRefused as exc:
        return render(request, "staff/_preview.html", {"refused": str(exc)}, status=429)
    return render(request, "staff/_job.html", job_context(job))


def _error_lines(form: Any, parts: Any) -> list[str]:
    lines = [f"{name}: {' '.join(errors)}" for name, errors in form.errors.items()]
    for index, errors in enumerate(parts.errors):
        lines += [f"parts[{index}].{name}: {' '.join(e)}" for name, e in errors.items()]
    return lines + [f"parts: {error}" for error in parts.non_form_errors()]


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def assignment_publish(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: what publishing will do. POST: queue the vetting and publish (with the justifications
    typed for earlier reasons) as a job, and show its page, which polls until the worker is done:
    vetting runs the reference at the seed point and the sampled variants, never in this request."""
    assignment = assignment_for_staff_or_404(user=request.user, slug=slug, authoring=True)
    if request.method == "POST":
        assert assignment.course is not None
        try:
            job = job_request(kind=AuthoringJob.Kind.PUBLISH, course=assignment.course, user=request.user,
                              assignment=assignment, payload={"justifications": _justifications(request.POST)})
        except JobRefused as exc:
            messages.error(request, str(exc))
            return render(request, "staff/publish.html", {"assignment": assignment, "course": assignment.course},
                          status=429)
        return redirect("staff-job", pk=job.pk)
    return render(request, "staff/publish.html", {"assignment": assignment, "course": assignment.course})


def _justifications(post: Any) -> dict[str, str]:
    """`justify:<reason code>` fields that say something, each cut to what a version keeps."""
    return {key[8:]: text.strip()[:publishing.MAX_JUSTIFICATION] for key, text in post.items()
            if key.startswith("justify:") and text.strip()}


@login_required
@require_POST
def assignment_duplicate(request: HttpRequest, slug: str) -> HttpResponse:
    assignment = assignment_for_staff_or_404(user=request.user, slug=slug, authoring=True)
    new_slug = request.POST.get("slug", "").strip() or f"{assignment.slug}-copy"
    try:
        title = request.POST.get("title", "").strip() or f"{assignment.title} (copy)"
        copy = publishing.assignment_duplicate(assignment=assignment, slug=new_slug, title=title)
    except CatalogError as exc:
        messages.error(request, f"{exc.field}: {exc.problem}")
        return redirect("staff-assignment-edit", slug=slug)
    return redirect("staff-assignment-edit", slug=copy.slug)


@login_required
@require_POST
def assignment_delete(request: HttpRequest, slug: str) -> HttpResponse:
    assignment = assignment_for_staff_or_404(user=request.user, slug=slug, authoring=True)
    course = assignment.course
    outcome = publishing.assignment_delete(assignment=assignment)
    messages.success(request, f"{slug} {outcome}" + (": its submissions are kept." if outcome == "archived" else "."))
    return redirect("staff-course", course=course.slug if course else "")


@login_required
@require_POST
def assignment_restore(request: HttpRequest, slug: str) -> HttpResponse:
    assignment = assignment_for_staff_or_404(user=request.user, slug=slug, authoring=True)
    if assignment.archived_at is None:
        messages.error(request, f"{slug} is not archived.")
    else:
        restored = publishing.assignment_restore(assignment=assignment)
        state = f"published (v{restored.version})" if restored.published else "a draft"
        messages.success(request, f"{slug} restored as {state}, with its {restored.submissions.count()} "
                                  "submission(s).")
    return redirect("staff-assignment-edit", slug=slug)


@login_required
@require_safe
def assignment_export(request: HttpRequest, slug: str) -> HttpResponse:
    assignment = assignment_for_staff_or_404(user=request.user, slug=slug, authoring=True)  # the answer key
    response = HttpResponse(assignment_toml(assignment=assignment), content_type="application/toml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{assignment.slug}.toml"'
    return response


@login_required
@require_safe
def course_export(request: HttpRequest, course: str) -> HttpResponse:
    found = course_for_staff_or_404(user=request.user, slug=course, authoring=True)  # reference programs too
    response = HttpResponse(files_zip(files=course_files(course=found)), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{found.slug}.zip"'
    return response


@login_required
@require_POST
def course_import(request: HttpRequest, course: str) -> HttpResponse:
    """Queue the uploaded files: a worker vets each and publishes only what passes."""
    found = course_for_staff_or_404(user=request.user, slug=course, authoring=True)
    try:
        files, refused = uploaded_files(request.FILES.get("catalog"))
    except CatalogError as exc:
        messages.error(request, str(exc))
        return redirect("staff-course", course=found.slug)
    try:
        job = job_request(kind=AuthoringJob.Kind.IMPORT, course=found, user=request.user,
                          payload={"files": files, "refused": refused})
    except JobRefused as exc:
        messages.error(request, str(exc))
        return redirect("staff-course", course=found.slug)
    return redirect("staff-job", pk=job.pk)
