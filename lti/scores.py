"""AGS score publishing: the counted score of a student goes to the LMS column of each bound link in the
LMS courses the student belongs to.

`scores_changed` is the one call grading makes (on commit, through grader/hooks.py); the Celery task
`lti.publish_score` sends the row with retries. Grading never waits for a platform.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from urllib.parse import urlsplit, urlunsplit

from django.db import transaction
from lti_tool.models import LtiMembership, LtiUser

from assignments.models import Assignment
from config.structured_logging import submission_context
from grader.models import Result, Submission
from grader.selectors import document_released, release_for
from infra import clock
from infra.enqueue import enqueue
from infra.lanes import LMS
from lti.models import LinkAssignment, ScoreDelivery
from lti.platform_client import LINEITEM_SCOPE, SCORE_SCOPE, PlatformError, platform_call, reply_json

log = logging.getLogger(__name__)
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"


def scores_changed(changed: list[tuple[int, int]]) -> None:
    """GRADER_SCORES_CHANGED_HOOK: after grading committed these (submission, student) pairs, queue the
    counted score of the students who came from an LMS for the assignment's links in their LMS courses.
    Never raises.

    Most students never arrived from an LMS and have nothing to publish: one cheap query for the whole
    batch finds those who did, with no transaction."""
    try:
        from_lms = set(LtiUser.objects.filter(auth_user_id__in={student for _, student in changed})
                       .values_list("auth_user_id", flat=True))
    except Exception:
        log.exception("could not look up LMS users for submissions %s", [pair[0] for pair in changed])
        return
    for submission_id, student_id in changed:
        if student_id in from_lms:
            with submission_context(submission_id):  # what it logs names the submission
                lti_score_publish_later(submission_id=submission_id)


def lti_score_publish_later(*, submission_id: int) -> None:
    """Queue the student's counted score for every LMS link of the assignment. Never raises."""
    try:
        for delivery_id in score_deliveries_update(submission_id=submission_id):
            score_enqueue(delivery_id)
    except Exception:  # grading has committed; a publishing bug must not surface there
        log.exception("could not queue LTI scores for submission %s", submission_id)


def score_enqueue(delivery_id: int) -> None:
    """The task that sends one score row, on the LMS lane (a slow platform never delays a grade)."""
    enqueue("lti.publish_score", delivery_id, lane=LMS,
            if_lost="the row stays pending, visible to instructors, who can retry it from the scores page")


def counted_result(*, user_id: int, assignment: Assignment) -> Result | None:
    results = Result.objects.filter(submission__student_id=user_id, submission__assignment=assignment,
                                    submission__status=Submission.Status.GRADED)
    if assignment.counts == Assignment.Counts.LAST:
        return results.order_by("-submission__created_at").first()
    return results.order_by("-score", "-submission__created_at").first()


@transaction.atomic
def score_deliveries_update(*, submission_id: int) -> list[int]:
    """Rows whose counted score or comment changed, with a timestamp later than any sent before."""
    result = Result.objects.select_related("submission__assignment", "submission__student").filter(
        submission_id=submission_id).first()
    if result is None:
        return []
    submission = result.submission
    links = _links_of(user_id=submission.student_id, assignment=submission.assignment)
    counted = counted_result(user_id=submission.student_id, assignment=submission.assignment) if links else None
    if counted is None:
        return []  # an LMS student, but not of a linked assignment
    changed = []
    comment = _comment(counted, release=release_for(user=submission.student, assignment=submission.assignment))
    for link, sub in links:
        fields = {"score_given": counted.score, "score_maximum": counted.max_score,
                  "comment": comment, "lti_user_id": sub}
        row = ScoreDelivery.objects.select_for_update().filter(link=link, user_id=submission.student_id).first()
        if row is not None and all(getattr(row, k) == v for k, v in fields.items()):
            continue
        now_ms = int(clock.now().timestamp() * 1000)
        if row is None:
            row = ScoreDelivery.objects.create(link=link, user_id=submission.student_id, timestamp_ms=now_ms, **fields)
        else:
            for field, value in fields.items():
                setattr(row, field, value)
            row.timestamp_ms = max(now_ms, row.timestamp_ms + 1)  # the LMS ignores a score older than its last
            row.status, row.tries, row.last_error = ScoreDelivery.Status.PENDING, 0, ""
            row.save()
        changed.append(row.id)
    return changed


def _links_of(*, user_id: int, assignment: Assignment) -> list[tuple[LinkAssignment, str]]:
    """The assignment's LMS links in the LMS courses the student belongs to (an active membership of the
    link's context), each with the student's `sub` on that platform. A link of another LMS course, even on
    the same deployment and bound to the same grader course, never receives this student's score."""
    subs = dict(LtiUser.objects.filter(auth_user_id=user_id).values_list("registration_id", "sub"))
    if not subs:
        return []
    contexts = set(LtiMembership.objects.filter(user__auth_user_id=user_id, is_active=True)
                   .values_list("context_id", flat=True))
    links = LinkAssignment.objects.filter(assignment=assignment, resource_link__context_id__in=contexts) \
        .select_related("resource_link__context__deployment")
    pairs = []
    for link in links:
        registration_id = link.resource_link.context.deployment.registration_id
        if registration_id in subs:
            pairs.append((link, subs[registration_id]))
    return pairs


def _comment(result: Result, *, release: str) -> str:
    """The diagnosis summary: one line per part, as the student sees it on the feedback page now (their
    feedback level: at "verdict" only whether each part is right, never the diagnosis's words)."""
    lines = [f"Score {result.score:g} of {result.max_score:g}."]
    document = result.document if isinstance(result.document, dict) and isinstance(result.document.get("parts"),
                                                                                   list) else {"parts": []}
    for part in document_released(document=document, release=release)["parts"]:
        diagnosis = part.get("diagnosis") or {}
        verdict = part.get("verdict") or ("correct" if part.get("correct") else "wrong")
        told = verdict if part.get("correct") else diagnosis.get("message") or verdict
        lines.append(f"{part.get('part')}: {told}")
    return "\n".join(lines)[:1000]


def score_publish(*, delivery_id: int) -> bool:
    """Send one row. Returns False when it is gone or already sent; raises PlatformError to retry."""
    row = ScoreDelivery.objects.select_related("link__resource_link__context__deployment__registration").filter(
        id=delivery_id).first()
    if row is None or row.status == ScoreDelivery.Status.SENT:
        return False
    registration = row.link.resource_link.context.deployment.registration
    stamp = row.timestamp_ms
    body = {"userId": row.lti_user_id, "scoreGiven": row.score_given, "scoreMaximum": row.score_maximum,
            "activityProgress": "Completed", "gradingProgress": "FullyGraded", "comment": row.comment,
            "timestamp": datetime.fromtimestamp(stamp / 1000, tz=UTC).isoformat(timespec="milliseconds")}
    ScoreDelivery.objects.filter(id=row.id).update(tries=row.tries + 1)
    platform_call(registration=registration, method="POST", url=_scores_url(line_item_ensure(link=row.link)),
                  scopes=[SCORE_SCOPE], what="the LMS's score service", json=body,
                  headers={"Content-Type": SCORE_TYPE})
    # Sent: unless a newer score arrived meanwhile (its own task sends it).
    ScoreDelivery.objects.filter(id=row.id, timestamp_ms=stamp).update(
        status=ScoreDelivery.Status.SENT, sent_at=clock.now(), last_error="")
    return True


def score_failed(*, delivery_id: int, error: str, final: bool) -> None:
    status = ScoreDelivery.Status.FAILED if final else ScoreDelivery.Status.PENDING
    ScoreDelivery.objects.filter(id=delivery_id).exclude(status=ScoreDelivery.Status.SENT).update(
        status=status, last_error=error[:2000])


def line_item_ensure(*, link: LinkAssignment) -> str:
    """The link's column: from the launch claim, else found or created through the line items URL."""
    if link.line_item_url:
        return link.line_item_url
    context = link.resource_link.context
    if not context.lineitems_url:
        raise PlatformError("the LMS gave no line item (gradebook column) for this link")
    registration = context.deployment.registration
    what = "the LMS's gradebook column service"
    found = reply_json(platform_call(
        registration=registration, method="GET", url=context.lineitems_url, scopes=[LINEITEM_SCOPE], what=what,
        params={"resource_link_id": link.resource_link.id_on_platform},
        headers={"Accept": "application/vnd.ims.lis.v2.lineitemcontainer+json"}), what=what)
    if isinstance(found, list) and found and isinstance(found[0], dict) and isinstance(found[0].get("id"), str):
        url = found[0]["id"]
    else:
        created = reply_json(platform_call(
            registration=registration, method="POST", url=context.lineitems_url, scopes=[LINEITEM_SCOPE], what=what,
            json={"scoreMaximum": _maximum(link.assignment), "label": link.assignment.title,
                  "resourceId": link.assignment.slug, "resourceLinkId": link.resource_link.id_on_platform},
            headers={"Content-Type": "application/vnd.ims.lis.v2.lineitem+json"}), what=what)
        if not isinstance(created, dict) or not isinstance(created.get("id"), str):
            raise PlatformError(f"{what}: the new column has no id")
        url = created["id"]
    if len(url) > 1000:
        raise PlatformError(f"{what}: the column's address is longer than 1,000 characters")
    LinkAssignment.objects.filter(id=link.id).update(line_item_url=url)
    return url


def _maximum(assignment: Assignment) -> float:
    return float(sum(part.points for part in assignment.parts.all())) or 1.0


def _scores_url(line_item_url: str) -> str:
    parts = urlsplit(line_item_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))
