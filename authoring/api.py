"""The authoring API: list, create, update and publish assignments as catalog TOML. Course-scoped
like the pages (assignments.access): an instructor of another course gets 404, a TA or student of
the course 403. Vetting runs the reference, so publishing is an authoring job a worker runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.exceptions import PermissionDenied
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from assignments.access import assignment_for_staff_or_404, course_for_staff_or_404
from assignments.models import Assignment, AuthoringJob
from authoring import publishing
from authoring.api_serializers import (
    AuthoredAssignmentSerializer,
    AuthoredDetailSerializer,
    AuthoringJobSerializer,
    CourseCopyRequestSerializer,
    CourseCopySerializer,
    CourseFeedbackSerializer,
    PublishSerializer,
    TomlSerializer,
)
from authoring.course_copy import CourseCopyError, copy_shift, course_copy_by
from authoring.jobs import PENDING, JobRefused, job_for_requester_or_404, job_request
from catalog.errors import CatalogError
from catalog.export import catalog_toml
from catalog.spec import catalog_data
from grader.api.parsers import BoundedJSONParser, flat_errors
from grader.api.serializers import STAFF_ONLY, DetailSerializer, ErrorsSerializer
from grader.api.waiting import row_waited

BAD_TOML = {400: OpenApiResponse(ErrorsSerializer, description="field → problem, nothing written")}


def _row(assignment: Assignment) -> dict[str, Any]:
    return {"slug": assignment.slug, "title": assignment.title, "course": assignment.course,
            "published": assignment.published, "version": assignment.version,
            "has_draft": assignment.draft is not None, "archived": assignment.archived_at is not None}


def _detail(assignment: Assignment) -> dict[str, Any]:
    return {**_row(assignment), "toml": catalog_toml(data=publishing.working_catalog(assignment=assignment))}


def _catalog(request: Request) -> dict[str, Any]:
    """The body's TOML as catalog data. Raises CatalogError."""
    body = TomlSerializer(data=request.data)
    if not body.is_valid():
        raise CatalogError("request", "toml", " ".join(str(e) for e in body.errors.get("toml", ["is required"])))
    return catalog_data("request", body.validated_data["toml"].encode("utf-8"))


def _written(request: Request, write: Callable[[dict[str, Any]], Assignment], code: int) -> Response:
    """`write` the body's catalog TOML; the assignment as written, or 400 with the field at fault."""
    try:
        assignment = write(_catalog(request))
    except CatalogError as exc:
        return Response({"errors": {exc.field: exc.problem}}, status=status.HTTP_400_BAD_REQUEST)
    return Response(AuthoredDetailSerializer(_detail(assignment)).data, status=code)


class AuthoredCollection(APIView):
    parser_classes = [BoundedJSONParser]

    @extend_schema(responses={200: AuthoredAssignmentSerializer(many=True), **STAFF_ONLY},
                   summary="The course's assignments, drafts and archived ones included (instructors)")
    def get(self, request: Request, course: str) -> Response:
        found = course_for_staff_or_404(user=request.user, slug=course, authoring=True)
        rows = [_row(a) for a in found.assignments.select_related("course").order_by("slug")]
        return Response(AuthoredAssignmentSerializer(rows, many=True).data)

    @extend_schema(request=TomlSerializer, responses={201: AuthoredDetailSerializer, **BAD_TOML, **STAFF_ONLY},
                   summary="Create an unpublished assignment from catalog TOML")
    def post(self, request: Request, course: str) -> Response:
        found = course_for_staff_or_404(user=request.user, slug=course, authoring=True)
        return _written(request, lambda data: publishing.assignment_create(course=found, data=data),
                        status.HTTP_201_CREATED)


class CourseFeedback(APIView):
    parser_classes = [BoundedJSONParser]

    @extend_schema(responses={200: CourseFeedbackSerializer, **STAFF_ONLY},
                   summary="The course's default feedback levels on a wrong attempt")
    def get(self, request: Request, course: str) -> Response:
        found = course_for_staff_or_404(user=request.user, slug=course, authoring=True)
        return Response(CourseFeedbackSerializer(found).data)

    @extend_schema(request=CourseFeedbackSerializer, responses={200: CourseFeedbackSerializer, 400: ErrorsSerializer,
                                                                **STAFF_ONLY},
                   summary="Set them: assignments without their own level follow at once")
    def put(self, request: Request, course: str) -> Response:
        found = course_for_staff_or_404(user=request.user, slug=course, authoring=True)
        body = CourseFeedbackSerializer(data=request.data)
        if not body.is_valid():
            return Response({"errors": flat_errors(body.errors)}, status=status.HTTP_400_BAD_REQUEST)
        publishing.course_release_set(course=found, **body.validated_data)
        return Response(CourseFeedbackSerializer(found).data)


class AuthoredDetail(APIView):
    parser_classes = [BoundedJSONParser]

    @extend_schema(responses={200: AuthoredDetailSerializer, **STAFF_ONLY})
    def get(self, request: Request, slug: str) -> Response:
        assignment = assignment_for_staff_or_404(user=request.user, slug=slug, authoring=True)
        return Response(AuthoredDetailSerializer(_detail(assignment)).data)

    @extend_schema(request=TomlSerializer, responses={200: AuthoredDetailSerializer, **BAD_TOML, **STAFF_ONLY},
                   summary="Save edits: onto a never-published assignment, else as its draft until the next publish")
    def put(self, request: Request, slug: str) -> Response:
        assignment = assignment_for_staff_or_404(user=request.user, slug=slug, authoring=True)
        return _written(request, lambda data: publishing.assignment_save(assignment=assignment, data=data),
                        status.HTTP_200_OK)


def _waited(job: AuthoringJob, seconds: float, user_id: Any) -> AuthoringJob:
    """The job once a worker has vetted it, or as it stands after `seconds` (the body caps it at 20)."""
    return row_waited(job, busy=PENDING, seconds=seconds, interval=0.1, holder=user_id)


def _job_response(job: AuthoringJob) -> Response:
    code = status.HTTP_202_ACCEPTED if job.status in PENDING else status.HTTP_200_OK
    return Response(AuthoringJobSerializer(job).data, status=code)


class AuthoredPublish(APIView):
    parser_classes = [BoundedJSONParser]

    @extend_schema(request=PublishSerializer,
                   responses={200: AuthoringJobSerializer, 202: AuthoringJobSerializer, **STAFF_ONLY,
                              429: OpenApiResponse(DetailSerializer, description="Too many of your jobs waiting "
                                                   "or running, or your sandbox time is spent")},
                   summary="Vet the working copy and publish it as a new version",
                   description="A worker vets it: 202 while it works (poll the job's URL, or give `wait`), 200 "
                               "once done with {version} or {refused: every reason no justification accepts}.")
    def post(self, request: Request, slug: str) -> Response:
        assignment = assignment_for_staff_or_404(user=request.user, slug=slug, authoring=True)
        body = PublishSerializer(data=request.data)
        if not body.is_valid():
            return Response({"errors": flat_errors(body.errors)},
                            status=status.HTTP_400_BAD_REQUEST)
        assert assignment.course is not None
        try:
            job = job_request(kind=AuthoringJob.Kind.PUBLISH, course=assignment.course, user=request.user,
                              assignment=assignment, payload={"justifications": body.validated_data["justifications"]})
        except JobRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_429_TOO_MANY_REQUESTS,
                            headers={"Retry-After": "60"})
        return _job_response(_waited(job, body.validated_data["wait"], request.user.pk))


class AuthoringJobDetail(APIView):
    @extend_schema(responses={200: AuthoringJobSerializer, 202: AuthoringJobSerializer, 404: DetailSerializer})
    def get(self, request: Request, pk: int) -> Response:
        return _job_response(job_for_requester_or_404(user=request.user, pk=pk))


class CourseCopyView(APIView):
    parser_classes = [BoundedJSONParser]

    @extend_schema(request=CourseCopyRequestSerializer,
                   responses={201: CourseCopySerializer,
                              400: OpenApiResponse(ErrorsSerializer, description="field → problem, nothing written"),
                              403: OpenApiResponse(DetailSerializer, description="A student of the course, or "
                                                   "someone who may not create courses (GRADER_COURSE_CREATORS)"),
                              404: STAFF_ONLY[404]},
                   summary="Copy the course into a new term",
                   description="A new course with the assignments (published versions), policies with every date "
                               "shifted by `shift_days` or to the new `start`, and the staff; no students or "
                               "submissions. Copies take the slug `<slug>-<new course slug>`; you become an "
                               "instructor of the copy.")
    def post(self, request: Request, course: str) -> Response:
        source = course_for_staff_or_404(user=request.user, slug=course, authoring=True)  # a TA may not copy
        body = CourseCopyRequestSerializer(data=request.data)
        if not body.is_valid():
            return Response({"errors": flat_errors(body.errors)}, status=status.HTTP_400_BAD_REQUEST)
        asked = body.validated_data
        try:
            shift = copy_shift(course=source, days=asked["shift_days"], start=asked["start"])
            copy = course_copy_by(user=request.user, source=source, slug=asked["slug"], title=asked["title"],
                                  shift=shift)
        except CourseCopyError as exc:
            return Response({"errors": {"body": str(exc)}}, status=status.HTTP_400_BAD_REQUEST)
        except PermissionDenied as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_403_FORBIDDEN)
        return Response(CourseCopySerializer({**vars(copy), "shift_days": shift.days}).data,
                        status=status.HTTP_201_CREATED)
