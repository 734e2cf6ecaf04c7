"""The staff API: each view checks access through assignments.access, so a
student of the course gets 403 and the staff of another course 404, then reads or calls one service."""

from __future__ import annotations

import csv
import io
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from assignments.access import assignment_for_staff_or_404, course_for_staff_or_404, course_role, staff_courses
from assignments.models import Release
from courseops.analytics import analytics_csv_rows, analytics_read
from courseops.api_serializers import (
    AnalyticsSerializer,
    CourseSerializer,
    GradebookSerializer,
    RegradeRequestSerializer,
    RegradeSerializer,
    StaffSubmissionSerializer,
)
from courseops.gradebook import EXPORTS, gradebook_json, gradebook_read
from courseops.misconceptions import stuck_after_from
from courseops.models import Regrade
from courseops.regrades import RegradeError, regrade_apply_start, regrade_request
from courseops.submission_lists import PAGE, SubmissionFilter, page_from, submissions_for_staff
from grader.api.parsers import flat_detail
from grader.api.serializers import STAFF_ONLY, DetailSerializer
from grader.api.waiting import row_waited


class CSVRenderer(BaseRenderer):
    """`?format=csv`: the view hands over the CSV text itself."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        if isinstance(data, str):
            return data.encode()
        return f"error\n{data.get('detail', '') if isinstance(data, dict) else ''}\n".encode()


class CanvasCSVRenderer(CSVRenderer):
    """`?format=canvas`: the gradebook as Canvas imports it."""

    format = "canvas"


class MoodleCSVRenderer(CSVRenderer):
    """`?format=moodle`: the gradebook as Moodle's CSV grade import reads it."""

    format = "moodle"


class CourseList(APIView):
    @extend_schema(responses={200: CourseSerializer(many=True), 403: DetailSerializer},
                   summary="Courses I am staff of (TA or instructor)")
    def get(self, request: Request) -> Response:
        courses = list(staff_courses(user=request.user))
        if not courses:
            raise PermissionDenied("These endpoints are for course staff.")
        rows = [{"slug": c.slug, "title": c.title, "role": course_role(user=request.user, course=c)}
                for c in courses]
        return Response(CourseSerializer(rows, many=True).data)


class Gradebook(APIView):
    renderer_classes = [JSONRenderer, CSVRenderer, CanvasCSVRenderer, MoodleCSVRenderer]

    @extend_schema(responses={200: GradebookSerializer, (200, "text/csv"): OpenApiTypes.STR, **STAFF_ONLY},
                   parameters=[OpenApiParameter("format", str, enum=["json", "csv", "canvas", "moodle"],
                                                description="csv: one row per student, starting with the username; "
                                                "canvas: Canvas's import columns (Student, ID, SIS User ID, SIS Login "
                                                "ID, Section) and its Points Possible row; moodle: email address, "
                                                "ID number and username to map from, then one column per assignment"),
                               OpenApiParameter("section", str)])
    def get(self, request: Request, course: str) -> Response:
        found = course_for_staff_or_404(user=request.user, slug=course)
        gradebook = gradebook_read(course=found, section=request.query_params.get("section", "")[:64])
        export = request.accepted_renderer.format
        if export in EXPORTS:
            suffix = "" if export == "csv" else f"-{export}"
            return Response(EXPORTS[export](gradebook), headers={
                "Content-Disposition": f'attachment; filename="{found.slug}-gradebook{suffix}.csv"'})
        return Response(gradebook_json(gradebook))


def staff_submissions(request: Request, slug: str) -> Response:
    """Everyone's submissions (called by the submissions collection for the course's staff)."""
    assignment = assignment_for_staff_or_404(user=request.user, slug=slug)
    problem = SubmissionFilter.query_problem(request.query_params)
    if problem:
        return Response({"detail": problem}, status=status.HTTP_400_BAD_REQUEST)
    offset = (page_from(request.query_params) - 1) * PAGE
    rows = submissions_for_staff(assignment=assignment, wanted=SubmissionFilter.from_query(request.query_params),
                                 offset=offset)
    context = {"request": request, "release": Release.ANSWER_KEY, "show_reason": True}
    return Response(StaffSubmissionSerializer(rows, many=True, context=context).data)


class Analytics(APIView):
    renderer_classes = [JSONRenderer, CSVRenderer]

    @extend_schema(responses={200: AnalyticsSerializer, (200, "text/csv"): OpenApiTypes.STR, **STAFF_ONLY},
                   parameters=[OpenApiParameter("stuck_after", int, description="Attempts without a right answer "
                                                "before a student counts as stuck (default 3)"),
                               OpenApiParameter("format", str, enum=["json", "csv"])])
    def get(self, request: Request, slug: str) -> Response:
        assignment = assignment_for_staff_or_404(user=request.user, slug=slug)
        data = analytics_read(assignment=assignment, stuck_after=stuck_after_from(request.query_params))
        if request.accepted_renderer.format == "csv":
            out = io.StringIO()
            csv.writer(out).writerows(analytics_csv_rows(data))
            return Response(out.getvalue())
        return Response(data)


def _waited(regrade: Regrade, seconds: float, user_id: Any) -> Regrade:
    """The regrade once the worker is done, or as it stands after `seconds` (the body caps it at 20)."""
    return row_waited(regrade, busy=(Regrade.Status.PREVIEWING, Regrade.Status.APPLYING), seconds=seconds,
                      interval=0.2, holder=user_id)


class RegradeCollection(APIView):
    @extend_schema(request=RegradeRequestSerializer,
                   responses={200: RegradeSerializer, 202: RegradeSerializer, 400: DetailSerializer, **STAFF_ONLY},
                   summary="Preview a regrade (dry_run true) or apply a finished preview (dry_run false)",
                   description="Both run on the maintenance lane: 202 while it works (poll the regrade's URL, or "
                               "give `wait`), 200 once done. Instructors only.")
    def post(self, request: Request, slug: str) -> Response:
        assignment = assignment_for_staff_or_404(user=request.user, slug=slug, authoring=True)
        body = RegradeRequestSerializer(data=request.data)
        if not body.is_valid():
            return Response({"detail": flat_detail(body.errors)}, status=status.HTTP_400_BAD_REQUEST)
        data = body.validated_data
        if data["dry_run"]:
            regrade = regrade_request(assignment=assignment, by=request.user)
        else:
            found = Regrade.objects.filter(id=data.get("regrade"), assignment=assignment).first()
            if found is None:
                return Response({"detail": "Give `regrade`: the id of a finished preview of this assignment."},
                                status=status.HTTP_400_BAD_REQUEST)
            try:
                regrade = regrade_apply_start(regrade_id=found.id)
            except RegradeError as exc:
                return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return _regrade_response(_waited(_committed(regrade), data["wait"], request.user.pk))


def _committed(regrade: Regrade) -> Regrade:
    regrade.refresh_from_db()
    return regrade


def _regrade_response(regrade: Regrade) -> Response:
    busy = regrade.status in (Regrade.Status.PREVIEWING, Regrade.Status.APPLYING)
    return Response(RegradeSerializer(regrade).data, status=status.HTTP_202_ACCEPTED if busy else status.HTTP_200_OK)


class RegradeDetail(APIView):
    @extend_schema(responses={200: RegradeSerializer, 202: RegradeSerializer, **STAFF_ONLY})
    def get(self, request: Request, slug: str, pk: int) -> Response:
        assignment = assignment_for_staff_or_404(user=request.user, slug=slug)
        regrade = Regrade.objects.filter(id=pk, assignment=assignment, submission=None).first()
        if regrade is None:
            raise Http404("No such regrade.")
        return _regrade_response(regrade)
