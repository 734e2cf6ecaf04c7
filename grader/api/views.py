"""JSON API views (SPEC §6): each reads with a selector or calls one service."""

from __future__ import annotations

import re
from typing import Any

from django.http import Http404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from assignments.access import is_course_staff
from assignments.models import Release
from grader import hooks
from grader.api.parsers import BoundedJSONParser, flat_errors
from grader.api.serializers import (
    AssignmentDetailSerializer,
    AssignmentSummarySerializer,
    DetailSerializer,
    ErrorsSerializer,
    SubmissionCreatedSerializer,
    SubmissionCreateSerializer,
    SubmissionSerializer,
)
from grader.finished import MAX_WAIT_S, submission_waited
from grader.headers import frame_ancestors
from grader.models import FINISHED, Submission
from grader.pictures import submission_picture
from grader.policy import PolicyError, RateLimited
from grader.selectors import (
    HISTORY_LIMIT,
    AssignmentRow,
    assignment_row,
    assignment_rows,
    assignment_to_submit,
    release_for,
    release_of,
    revealed_answer_key,
    submission_visible,
    submissions_mine,
    viewer_is_staff,
)
from grader.workflow import AlreadySubmitted, submission_create
from grading.answer_key import answer_key_svg
from grading.answer_parsing import AnswerErrors

IDEMPOTENCY_KEY = re.compile(r"[A-Za-z0-9._:-]{1,64}")
SVG_POLICY = "default-src 'none'; style-src 'unsafe-inline'"


def svg_policy(request: Request) -> str:
    """No script runs even when a picture is opened directly; framed only where pages may be
    (default-src does not cover frame-ancestors: X-Frame-Options alone guarded it)."""
    return f"{SVG_POLICY}; frame-ancestors {' '.join(frame_ancestors(request))}"


def _row_or_404(request: Request, slug: str) -> AssignmentRow:
    row = assignment_row(user=request.user, slug=slug)
    if row is None:
        raise Http404("No such assignment in your courses.")
    return row


# The filters of the course staff's view (GRADER_STAFF_SUBMISSIONS_HOOK: course operations).
STAFF_FILTERS = [OpenApiParameter(name, str, description=text) for name, text in [
    ("student", "Staff: only this username"), ("part", "Staff: a part key the other filters apply to"),
    ("kind", "Staff: diagnosis kind, e.g. missing_path"), ("status", "Staff: queued, running, graded or error"),
    ("correct", "Staff: true or false"), ("infra", "Staff: 1 for infrastructure errors only"),
    ("page", "Staff: page number, newest first")]]


class AssignmentList(APIView):
    @extend_schema(responses=AssignmentSummarySerializer(many=True))
    def get(self, request: Request) -> Response:
        rows = assignment_rows(user=request.user)
        return Response(AssignmentSummarySerializer(rows, many=True, context={"request": request}).data)


class AssignmentDetail(APIView):
    @extend_schema(responses=AssignmentDetailSerializer)
    def get(self, request: Request, slug: str) -> Response:
        row = _row_or_404(request, slug)
        context = {"request": request, "answer_key": revealed_answer_key(row=row, user=request.user)}
        return Response(AssignmentDetailSerializer(row, context=context).data)


class SubmissionCollection(APIView):
    parser_classes = [BoundedJSONParser]

    @extend_schema(responses=SubmissionSerializer(many=True), parameters=STAFF_FILTERS,
                   summary="My submissions to this assignment; for its course's staff, everyone's (filterable)")
    def get(self, request: Request, slug: str) -> Response:
        row = _row_or_404(request, slug)
        if is_course_staff(user=request.user, course_id=row.assignment.course_id):
            staff_view = hooks.staff_submissions(request, slug)
            if staff_view is not None:
                return staff_view
        submissions = submissions_mine(user=request.user, assignment=row.assignment)[:HISTORY_LIMIT]
        context = {"request": request, "show_reason": False,
                   "release": release_for(user=request.user, assignment=row.assignment)}
        return Response(SubmissionSerializer(submissions, many=True, context=context).data)

    @extend_schema(
        request=SubmissionCreateSerializer,
        parameters=[OpenApiParameter("Idempotency-Key", str, location=OpenApiParameter.HEADER, description=(
            "Your own name for this submission (1–64 of A–Z a–z 0–9 . _ : -). Sent again with the same body, "
            "e.g. after a timeout or a 503, it returns the submission made the first time instead of a "
            "second one (header Idempotent-Replayed: true)"))],
        responses={
            202: SubmissionCreatedSerializer,
            200: OpenApiResponse(SubmissionSerializer, description="Graded within `wait`, or a retry (same "
                                 "Idempotency-Key) of a submission graded since"),
            400: OpenApiResponse(ErrorsSerializer, description="Unreadable answers; no attempt used"),
            403: OpenApiResponse(DetailSerializer, description="Refused by the policy (closed, no attempts left)"),
            409: OpenApiResponse(DetailSerializer, description="The Idempotency-Key names a different submission"),
            404: OpenApiResponse(DetailSerializer, description="No such assignment in your courses"),
        },
    )
    def post(self, request: Request, slug: str) -> Response:
        found = assignment_to_submit(user=request.user, slug=slug)
        if found is None:
            raise Http404("No such assignment in your courses.")
        body = SubmissionCreateSerializer(data=request.data)
        if not body.is_valid():
            return Response({"errors": flat_errors(body.errors)}, status=status.HTTP_400_BAD_REQUEST)
        key = request.headers.get("Idempotency-Key")
        if key is not None and not IDEMPOTENCY_KEY.fullmatch(key):
            return Response({"errors": {"Idempotency-Key": "Give 1 to 64 letters, digits or . _ : -"}},
                            status=status.HTTP_400_BAD_REQUEST)
        headers: dict[str, str] = {}
        try:
            submission = submission_create(student=request.user, assignment=found.assignment,
                                           answers=body.validated_data["answers"], code=body.validated_data["code"],
                                           idempotency_key=key, extension=found.extension)
        except AlreadySubmitted as exc:
            if not exc.same:
                return Response({"detail": "This Idempotency-Key was used for a different submission."},
                                status=status.HTTP_409_CONFLICT)
            submission, headers["Idempotent-Replayed"] = exc.submission, "true"
        except AnswerErrors as exc:
            return Response({"errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST)
        except RateLimited as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_429_TOO_MANY_REQUESTS,
                            headers={"Retry-After": "60"})
        except PolicyError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_403_FORBIDDEN)
        headers["Location"] = request.build_absolute_uri(reverse("api-submission", args=[submission.id]))
        wait = body.validated_data["wait"]
        finished = submission.status in FINISHED or (
            wait and submission_waited(submission_id=submission.id, seconds=wait, user_id=request.user.pk))
        if finished:  # graded within the wait, or a retry of one graded since
            graded = submission_visible(user=request.user, submission_id=submission.id)
            if graded is not None and graded.status in FINISHED:
                return _submission_response(request, graded, headers=headers)
        return Response({"id": submission.id, "status": submission.status}, status=status.HTTP_202_ACCEPTED,
                        headers=headers)


def _submission_response(request: Request, submission: Submission, **kwargs: Any) -> Response:
    """The submission as its viewer may see it. A pending one shows neither a result nor an error, so
    a poll of it skips the policy checks; a finished one knows whether the viewer is staff from its row."""
    finished = submission.status in FINISHED
    staff = finished and viewer_is_staff(user=request.user, submission=submission)
    release = Release.VERDICT if not finished else Release.ANSWER_KEY if staff else release_of(
        user=request.user, submission=submission)
    context = {"request": request, "show_reason": staff, "release": release}
    return Response(SubmissionSerializer(submission, context=context).data, **kwargs)


class SubmissionDetail(APIView):
    @extend_schema(responses={200: SubmissionSerializer, 400: ErrorsSerializer, 404: DetailSerializer},
                   parameters=[OpenApiParameter("wait", float, description=(
                       "Seconds (at most 20) to wait while it is queued or running: the answer comes as soon "
                       "as grading finishes, instead of one poll after another"))])
    def get(self, request: Request, pk: int) -> Response:
        submission = submission_visible(user=request.user, submission_id=pk)
        if submission is None:
            raise Http404("No such submission.")
        wait = request.query_params.get("wait")
        if wait is not None:
            try:
                seconds = float(wait)
                if not 0 <= seconds <= MAX_WAIT_S:
                    raise ValueError
            except ValueError:
                return Response({"errors": {"wait": f"Give a number of seconds from 0 to {MAX_WAIT_S:g}."}},
                                status=status.HTTP_400_BAD_REQUEST)
            if submission.status not in FINISHED and seconds and submission_waited(
                    submission_id=pk, seconds=seconds, user_id=request.user.pk):
                submission = submission_visible(user=request.user, submission_id=pk) or submission
        return _submission_response(request, submission)


class SVGRenderer(BaseRenderer):
    media_type = "image/svg+xml"
    format = "svg"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        return data.encode() if isinstance(data, str) else b""  # errors carry their status code only


class AssignmentAnswersGraph(APIView):
    """How autograd got the expected answers of the student's own values, once they are revealed."""

    renderer_classes = [SVGRenderer]

    @extend_schema(operation_id="assignment_answers_svg", responses={(200, "image/svg+xml"): OpenApiTypes.STR})
    def get(self, request: Request, slug: str) -> Response:
        row = _row_or_404(request, slug)
        svg = row.expected_shown and answer_key_svg(assignment=row.assignment, student_id=request.user.pk)
        if not svg:
            raise Http404("The expected answers are not revealed to you yet.")
        headers = {"Content-Security-Policy": svg_policy(request), "Cache-Control": "private, max-age=60"}
        return Response(svg, headers=headers)


class SubmissionGraph(APIView):
    """The graph picture with the wrong path highlighted, for the page (session) and scripts (token)."""

    renderer_classes = [SVGRenderer]

    @extend_schema(operation_id="submission_graph_svg", responses={(200, "image/svg+xml"): OpenApiTypes.STR},
                   parameters=[OpenApiParameter("part", str, description="Part key; default: every wrong part")])
    def get(self, request: Request, pk: int) -> Response:
        submission = submission_visible(user=request.user, submission_id=pk)
        svg = submission and submission_picture(submission=submission, user=request.user,
                                                part=request.query_params.get("part"))
        if not svg:
            raise Http404("No graph: no such submission, not graded yet, or no such part.")
        headers = {"Content-Security-Policy": svg_policy(request), "Cache-Control": "private, max-age=600"}
        return Response(svg, headers=headers)
