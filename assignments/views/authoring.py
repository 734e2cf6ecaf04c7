"""Authoring pages for a course's instructors. Thin: parse the forms, call one service, render."""

from __future__ import annotations

import re
import zipfile
import zlib
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from assignments import authoring
from assignments.access import assignment_for_staff_or_404, course_for_staff_or_404
from assignments.catalog_export import assignment_toml, course_files, files_zip
from assignments.forms import AssignmentForm, PartFormSet, catalog_from_forms, initial_from_catalog
from assignments.models import Course, Extension, Membership
from assignments.preview import preview_build
from assignments.spec import CatalogError
from assignments.toml_text import toml_loads

MAX_UPLOAD = 2_000_000
MAX_ZIP_FILES = 200
MAX_UNPACKED = 5_000_000  # every .toml of an imported zip together
COURSE_SLUG_MAX = Course._meta.get_field("slug").max_length or 50
COURSE_TITLE_MAX = Course._meta.get_field("title").max_length or 200
COURSE_SLUG = re.compile(rf"[a-z0-9-]{{1,{COURSE_SLUG_MAX}}}")


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
    return render(request, template, context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def course_create(request: HttpRequest) -> HttpResponse:
    if not Membership.objects.filter(user_id=request.user.pk, role=Membership.Role.INSTRUCTOR).exists() \
            and not request.user.has_perm("assignments.add_course"):
        return render(request, "staff/denied.html", status=403)
    error = ""
    if request.method == "POST":
        slug, title = request.POST.get("slug", "").strip().lower(), request.POST.get("title", "").strip()
        # ASCII only and within the columns: `ａｂ` passed isalnum() and broke the redirect (500).
        if not COURSE_SLUG.fullmatch(slug) or not title or len(title) > COURSE_TITLE_MAX \
                or Course.objects.filter(slug=slug).exists():
            error = (f"Give a title of at most {COURSE_TITLE_MAX} characters and an unused slug of at most "
                     f"{COURSE_SLUG_MAX} lowercase letters, digits and '-'.")
        else:
            course = authoring.course_create(user=request.user, slug=slug, title=title)
            return redirect("staff-course", course=course.slug)
    return render(request, "staff/course_new.html", {"error": error}, status=400 if error else 200)


@login_required
@require_POST
def course_staff(request: HttpRequest, course: str) -> HttpResponse:
    found = course_for_staff_or_404(user=request.user, slug=course, authoring=True)
    try:
        membership = authoring.staff_add(course=found, username=request.POST.get("username", "").strip(),
                                         role=request.POST.get("role", ""))
        messages.success(request, f"{membership.user} is now {membership.role} in {found.title}.")
    except ValueError as exc:
        messages.error(request, str(exc))
    return redirect("staff-course", course=found.slug)


@login_required
@require_http_methods(["GET", "POST"])
def assignment_create(request: HttpRequest, course: str) -> HttpResponse:
    found = course_for_staff_or_404(user=request.user, slug=course, authoring=True)
    form, parts = _forms(request, slug_fixed=False, data=None)
    if request.method == "POST" and (data := _catalog_or_errors(form, parts)) is not None:
        try:
            assignment = authoring.assignment_create(course=found, data=data)
        except CatalogError as exc:
            form.add_error(None, f"{exc.field}: {exc.problem}")
        else:
            messages.success(request, "Created as a draft: preview it, then publish.")
            return redirect("staff-assignment-edit", slug=assignment.slug)
    status = 400 if request.method == "POST" else 200
    return _editor(request, "staff/assignment_edit.html", {"course": found, "form": form, "parts": parts,
                                                            "assignment": None}, status)


@login_required
@require_http_methods(["GET", "POST"])
def assignment_edit(request: HttpRequest, slug: str) -> HttpResponse:
    assignment = assignment_for_staff_or_404(user=request.user, slug=slug, authoring=True)
    form, parts = _forms(request, slug_fixed=True, data=authoring.working_catalog(assignment=assignment))
    if request.method == "POST" and (data := _catalog_or_errors(form, parts)) is not None:
        try:
            authoring.assignment_save(assignment=assignment, data=data)
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
    """The preview fragment for the form as it is now (unsaved edits included), with a trial answer."""
    assignment = assignment_for_staff_or_404(user=request.user, slug=slug, authoring=True)
    form, parts = AssignmentForm(request.POST, slug_fixed=True, initial={"slug": slug}), \
        PartFormSet(request.POST, prefix="parts")
    data = _catalog_or_errors(form, parts)
    if data is None:
        return render(request, "staff/_preview.html", {"form_errors": _error_lines(form, parts)}, status=400)
    answers = {k[6:]: v for k, v in request.POST.items() if k.startswith("trial:") and v.strip()}
    code = {k[5:]: v for k, v in request.POST.items() if k.startswith("code:") and v.strip()}
    try:
        preview = authoring.staged(assignment=assignment, data=data,
                                   work=lambda row: preview_build(assignment=row, answers=answers, code=code))
    except CatalogError as exc:
        return render(request, "staff/_preview.html", {"form_errors": [f"{exc.field}: {exc.problem}"]}, status=400)
    return render(request, "staff/_preview.html", {"preview": preview, "data": data})


def _error_lines(form: Any, parts: Any) -> list[str]:
    lines = [f"{name}: {' '.join(errors)}" for name, errors in form.errors.items()]
    for index, errors in enumerate(parts.errors):
        lines += [f"parts[{index}].{name}: {' '.join(e)}" for name, e in errors.items()]
    return lines


@login_required
@require_http_methods(["GET", "POST"])
def assignment_publish(request: HttpRequest, slug: str) -> HttpResponse:
    assignment = assignment_for_staff_or_404(user=request.user, slug=slug, authoring=True)
    if request.method == "POST":
        justifications = {k[8:]: v for k, v in request.POST.items() if k.startswith("justify:")}
        try:
            version = authoring.assignment_publish(assignment=assignment, user=request.user,
                                                   justifications=justifications)
        except authoring.PublishRefused as exc:
            return render(request, "staff/publish.html", {"assignment": assignment, "course": assignment.course,
                                                          "reasons": exc.reasons, "refused": True}, status=400)
        except CatalogError as exc:
            messages.error(request, f"{exc.field}: {exc.problem}")
            return redirect("staff-assignment-edit", slug=slug)
        messages.success(request, f"Published version {version.number}.")
        return redirect("staff-assignment-edit", slug=slug)
    reasons = authoring.assignment_vet_working(assignment=assignment)
    return render(request, "staff/publish.html", {"assignment": assignment, "course": assignment.course,
                                                  "reasons": reasons, "refused": False})


@login_required
@require_POST
def assignment_duplicate(request: HttpRequest, slug: str) -> HttpResponse:
    assignment = assignment_for_staff_or_404(user=request.user, slug=slug, authoring=True)
    new_slug = request.POST.get("slug", "").strip() or f"{assignment.slug}-copy"
    try:
        title = request.POST.get("title", "").strip() or f"{assignment.title} (copy)"
        copy = authoring.assignment_duplicate(assignment=assignment, slug=new_slug, title=title)
    except CatalogError as exc:
        messages.error(request, f"{exc.field}: {exc.problem}")
        return redirect("staff-assignment-edit", slug=slug)
    return redirect("staff-assignment-edit", slug=copy.slug)


@login_required
@require_POST
def assignment_delete(request: HttpRequest, slug: str) -> HttpResponse:
    assignment = assignment_for_staff_or_404(user=request.user, slug=slug, authoring=True)
    course = assignment.course
    outcome = authoring.assignment_delete(assignment=assignment)
    messages.success(request, f"{slug} {outcome}" + (": its submissions are kept." if outcome == "archived" else "."))
    return redirect("staff-course", course=course.slug if course else "")


@login_required
@require_GET
def assignment_export(request: HttpRequest, slug: str) -> HttpResponse:
    assignment = assignment_for_staff_or_404(user=request.user, slug=slug)
    response = HttpResponse(assignment_toml(assignment=assignment), content_type="application/toml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{assignment.slug}.toml"'
    return response


@login_required
@require_GET
def course_export(request: HttpRequest, course: str) -> HttpResponse:
    found = course_for_staff_or_404(user=request.user, slug=course)
    response = HttpResponse(files_zip(files=course_files(course=found)), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{found.slug}.zip"'
    return response


@login_required
@require_POST
def course_import(request: HttpRequest, course: str) -> HttpResponse:
    found = course_for_staff_or_404(user=request.user, slug=course, authoring=True)
    upload = request.FILES.get("catalog")
    try:
        documents = _uploaded_documents(upload)
        loaded = authoring.catalog_import(course=found, documents=documents)
    except CatalogError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Imported {len(loaded)} assignment(s): {', '.join(a.slug for a in loaded)}.")
    return redirect("staff-course", course=found.slug)


def _uploaded_documents(upload: Any) -> list[tuple[str, dict[str, Any]]]:
    if upload is None or upload.size > MAX_UPLOAD:
        raise CatalogError("upload", "file", f"choose a .toml or .zip file of at most {MAX_UPLOAD // 1_000_000} MB")
    named = _zip_members(upload) if upload.name.endswith(".zip") else [(upload.name, upload.read())]
    return [(name, _toml(name, blob)) for name, blob in named]


def _zip_members(upload: Any) -> list[tuple[str, bytes]]:
    """The archive's .toml files, bounded before anything is unpacked: a 2 MB zip of 1,000 members of
    1.9 MB of spaces each made the request hold 1.9 GB and parse TOML for minutes. (zipfile never
    unpacks a member past the size its header declares, so the declared sizes bound the work.)"""
    try:
        with zipfile.ZipFile(upload) as archive:
            members = [i for i in archive.infolist()
                       if i.filename.endswith(".toml") and not i.filename.endswith("course.toml")]
            _zip_bounded(upload.name, members)
            return [(i.filename, archive.read(i)) for i in members]
    except CatalogError:
        raise
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError, EOFError, OSError, ValueError, zlib.error) as exc:
        # corrupt, encrypted (RuntimeError) or of an unsupported compression (NotImplementedError)
        raise CatalogError(upload.name, "file", f"is not a zip archive this server can read ({exc})") from None


def _zip_bounded(name: str, members: list[zipfile.ZipInfo]) -> None:
    if len(members) > MAX_ZIP_FILES:
        raise CatalogError(name, "file", f"holds more than {MAX_ZIP_FILES} .toml files")
    if sum(i.file_size for i in members) > MAX_UNPACKED:
        raise CatalogError(name, "file", f"unpacks to more than {MAX_UNPACKED // 1_000_000} MB of TOML")


def _toml(name: str, blob: bytes) -> dict[str, Any]:
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CatalogError(name, "file", f"is not UTF-8 TOML ({exc})") from None
    return toml_loads(text, path=name, field="file")


@login_required
@require_http_methods(["GET", "POST"])
def assignment_extensions(request: HttpRequest, slug: str) -> HttpResponse:
    assignment = assignment_for_staff_or_404(user=request.user, slug=slug, authoring=True)
    if request.method == "POST":
        try:
            post = request.POST
            authoring.extension_set(assignment=assignment, username=post.get("username", "").strip(),
                                    due_at=post.get("due_at", ""), extra_attempts=post.get("extra", "0"),
                                    reason=post.get("reason", ""))
            messages.success(request, "Extension saved.")
        except ValueError as exc:
            messages.error(request, str(exc))
        return redirect("staff-assignment-extensions", slug=slug)
    extensions = Extension.objects.filter(assignment=assignment).select_related("student")
    return render(request, "staff/extensions.html", {"assignment": assignment, "course": assignment.course,
                                                     "extensions": extensions})


