"""LTI 1.3 end to end against the test platform (lti1p3platform), the real web server, worker and sandbox.

login → launch → submit → the LMS gradebook receives the score; deep linking; roster sync.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from assignments.models import Assignment, Membership
from grader.models import Submission
from lti.models import ScoreDelivery
from tests.clients import logged_in
from tests.lti_platform.browser import LmsBrowser, forms_of
from tests.lti_platform.fixtures import platform_register, platform_running
from tests.lti_platform.launches import INSTRUCTOR, LEARNER, TA, LaunchSpec, Member
from tests.lti_platform.server import LmsPlatform
from tests.lti_platform.services import line_item_create

pytestmark = pytest.mark.integration
SLUG = "positive-gradient"  # x.grad = 7 at the seed point (course notes, tests/seed_answers.py)


@pytest.fixture(scope="module")
def lti_platform(web_server: str, django_db_blocker: Any) -> Iterator[LmsPlatform]:
    yield from platform_running(web_server=web_server, django_db_blocker=django_db_blocker)


def person(role: str = LEARNER, name: str = "Ada Student") -> Member:
    return Member(user_id=f"user-{uuid.uuid4().hex[:10]}", name=name, roles=[role])


def wait_for(check: Callable[[], Any], *, timeout: float = 90, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.2)
    raise AssertionError(f"{what} not reached within {timeout}s")


def submit(browser: LmsBrowser, base: str, slug: str, answers: dict[str, str]) -> int:
    page = browser.session.get(f"{base}/assignments/{slug}/", timeout=10)
    assert page.status_code == 200, page.text[:300]
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token is not None
    reply = browser.session.post(f"{base}/assignments/{slug}/", data={"csrfmiddlewaretoken": token[1], **answers},
                                 allow_redirects=False, timeout=10)
    assert reply.status_code == 302, reply.text[:500]
    return int(reply.headers["Location"].rstrip("/").split("/")[-1])


def graded(submission_id: int) -> Submission:
    return wait_for(lambda: Submission.objects.filter(id=submission_id, status="graded").select_related(
        "result").first(), what=f"submission {submission_id} graded")


def scores_for(platform: LmsPlatform, user_id: str, column: str | None = None) -> list[dict[str, Any]]:
    """Scores the LMS received for a user (on one column; the same assignment may be linked twice)."""
    return [s for s in platform.state.scores if s["userId"] == user_id and column in (None, s["line_item"])]


def test_a_launched_student_submits_and_the_lms_receives_each_better_score(
        live_db: None, worker: Any, lti_platform: LmsPlatform, web_server: str) -> None:
    student = person()
    link_id = f"link-{uuid.uuid4().hex[:8]}"
    column = line_item_create(state=lti_platform.state, base=lti_platform.url("/contexts/course-1/lineitems"),
                              body={"label": "Positive gradient", "scoreMaximum": 4, "resourceLinkId": link_id})
    browser = LmsBrowser(lti_platform)
    launched = browser.launch(LaunchSpec(user=student, resource_link_id=link_id, custom={"assignment": SLUG}))
    assert launched.response.status_code == 302
    assert launched.response.headers["Location"] == f"/assignments/{SLUG}/"

    wrong = graded(submit(browser, web_server, SLUG, {"x.grad": "6"}))  # forgot the +3 of the linear term
    first = wait_for(lambda: scores_for(lti_platform, student.user_id, column["id"]), what="first score at the LMS")
    assert first[0]["scoreGiven"] == wrong.result.score == 0
    assert first[0]["scoreMaximum"] == wrong.result.max_score
    assert first[0]["line_item"] == column["id"]
    assert (first[0]["gradingProgress"], first[0]["activityProgress"]) == ("FullyGraded", "Completed")
    assert "x.grad:" in first[0]["comment"] and "x.grad: correct" not in first[0]["comment"]

    right = graded(submit(browser, web_server, SLUG, {"x.grad": "7"}))
    both = wait_for(lambda: len(scores_for(lti_platform, student.user_id, column["id"])) == 2 and
                    scores_for(lti_platform, student.user_id, column["id"]), what="second score at the LMS")
    assert both[1]["scoreGiven"] == right.result.score == 1.0  # x.grad is worth one point
    assert "x.grad: correct" in both[1]["comment"]
    assert both[1]["timestamp"] > both[0]["timestamp"]  # the platform refuses a timestamp going backwards

    graded(submit(browser, web_server, SLUG, {"x.grad": "5"}))  # worse: the best score still counts
    time.sleep(2)
    assert len(scores_for(lti_platform, student.user_id, column["id"])) == 2
    delivery = ScoreDelivery.objects.get(user__lti_users__sub=student.user_id, link__line_item_url=column["id"])
    assert delivery.status == ScoreDelivery.Status.SENT and delivery.score_given == 1.0


def test_a_revoked_token_gets_one_retry_with_a_fresh_token(
        live_db: None, worker: Any, lti_platform: LmsPlatform, web_server: str) -> None:
    student = person()
    link_id = f"link-{uuid.uuid4().hex[:8]}"
    column = line_item_create(state=lti_platform.state, base=lti_platform.url("/contexts/course-1/lineitems"),
                              body={"label": "Positive gradient", "scoreMaximum": 4, "resourceLinkId": link_id})
    browser = LmsBrowser(lti_platform)
    assert browser.launch(LaunchSpec(user=student, resource_link_id=link_id,
                                     custom={"assignment": SLUG})).response.status_code == 302
    issued = lti_platform.state.score_tokens_issued
    lti_platform.state.revoke_scores[column["id"]] = 1
    graded(submit(browser, web_server, SLUG, {"x.grad": "7"}))
    [score] = wait_for(lambda: scores_for(lti_platform, student.user_id, column["id"]),
                       what="score after a 401")
    assert score["scoreGiven"] == 1.0
    assert lti_platform.state.score_tokens_issued == issued + 1  # the cached token was replaced once, not per call


def test_an_instructor_deep_links_two_assignments_and_a_student_opens_one(
        live_db: None, lti_platform: LmsPlatform, web_server: str) -> None:
    browser = LmsBrowser(lti_platform)
    launched = browser.launch(LaunchSpec(user=person(INSTRUCTOR, "Grace Teacher"), deep_linking=True))
    assert launched.response.headers["Location"] == "/lti/deep-link/"
    page = browser.session.get(f"{web_server}/lti/deep-link/", timeout=10)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token is not None and "dead-relu" in page.text
    reply = browser.session.post(f"{web_server}/lti/deep-link/", timeout=10, data={
        "csrfmiddlewaretoken": token[1], "assignment": [SLUG, "dead-relu"]})
    [form] = [f for f in forms_of(reply.text) if "JWT" in dict(f["fields"])]  # type: ignore[call-overload]
    assert form["action"] == lti_platform.url("/deep_link_return")
    before = len(lti_platform.state.deep_link_items)
    returned = requests.post(str(form["action"]), data=dict(form["fields"]), timeout=10)  # type: ignore[arg-type]
    assert returned.status_code == 200, returned.text
    items = lti_platform.state.deep_link_items[before:]
    by_slug = {item["custom"]["assignment"]: item for item in items}
    assert set(by_slug) == {SLUG, "dead-relu"}
    for slug, item in by_slug.items():
        points = sum(p.points for p in Assignment.objects.get(slug=slug).parts.all())
        assert item["type"] == "ltiResourceLink" and item["url"] == f"{web_server}/lti/launch/"
        assert item["lineItem"] == {"scoreMaximum": points, "label": Assignment.objects.get(slug=slug).title,
                                    "resourceId": slug}

    student = LmsBrowser(lti_platform).launch(LaunchSpec(user=person(), resource_link_id="dl-new",
                                                         custom=by_slug["dead-relu"]["custom"]))
    assert student.response.headers["Location"] == "/assignments/dead-relu/"


def test_a_student_on_an_unbound_link_waits_for_the_instructor_to_choose(
        live_db: None, lti_platform: LmsPlatform, web_server: str) -> None:
    link_id = f"unbound-{uuid.uuid4().hex[:8]}"
    early = LmsBrowser(lti_platform).launch(LaunchSpec(user=person(), resource_link_id=link_id))
    assert early.response.status_code == 403 and "not set up yet" in early.response.text
    teacher = LmsBrowser(lti_platform)
    launched = teacher.launch(LaunchSpec(user=person(INSTRUCTOR), resource_link_id=link_id))
    assert launched.response.headers["Location"] == "/lti/bind/"
    page = teacher.session.get(f"{web_server}/lti/bind/", timeout=10)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token is not None
    bound = teacher.session.post(f"{web_server}/lti/bind/", data={"csrfmiddlewaretoken": token[1],
                                                                   "assignment": "detach"},
                                 allow_redirects=False, timeout=10)
    assert bound.headers["Location"] == "/assignments/detach/"
    later = LmsBrowser(lti_platform).launch(LaunchSpec(user=person(), resource_link_id=link_id))
    assert later.response.headers["Location"] == "/assignments/detach/"


def test_an_instructor_launch_syncs_the_roster_with_roles_and_drops(
        live_db: None, worker: Any, lti_platform: LmsPlatform, instructor: Any) -> None:
    ta, learner, gone = person(TA, "Tom Assistant"), person(LEARNER, "Lin Learner"), person(LEARNER, "Gone Student")
    for member in (ta, learner, gone):
        lti_platform.enroll(member)
    LmsBrowser(lti_platform).launch(LaunchSpec(user=gone, custom={"assignment": SLUG}))  # enrolled, then drops
    gone.status = "Inactive"
    launched = LmsBrowser(lti_platform).launch(LaunchSpec(user=person(INSTRUCTOR), custom={"assignment": SLUG}))
    assert launched.response.status_code == 302

    def synced_roles() -> dict[str, str] | None:
        rows = Membership.objects.filter(user__lti_users__sub__in=[ta.user_id, learner.user_id, gone.user_id])
        roles = dict(rows.values_list("user__lti_users__sub", "role"))
        return roles if set(roles) == {ta.user_id, learner.user_id} else None

    synced = wait_for(synced_roles, what="roster synced")
    assert synced == {ta.user_id: "ta", learner.user_id: "student"}

    late = lti_platform.enroll(person(LEARNER, "Late Joiner"))  # on demand, from the course's LMS page
    assert logged_in(instructor).post("/lti/courses/autograd-101/", {"retry": "roster"}).status_code == 302
    wait_for(lambda: Membership.objects.filter(user__lti_users__sub=late.user_id, role="student").exists(),
             what="the late joiner synced")


def test_a_refused_score_is_shown_to_instructors_and_retried_until_it_arrives(
        live_db: None, worker: Any, lti_platform: LmsPlatform, web_server: str, instructor: Any) -> None:
    student = person()
    link_id = f"link-{uuid.uuid4().hex[:8]}"
    column = line_item_create(state=lti_platform.state, base=lti_platform.url("/contexts/course-1/lineitems"),
                              body={"label": "Positive gradient", "scoreMaximum": 4, "resourceLinkId": link_id})
    browser = LmsBrowser(lti_platform)
    assert browser.launch(LaunchSpec(user=student, resource_link_id=link_id,
                                     custom={"assignment": SLUG})).response.status_code == 302
    lti_platform.state.revoke_scores[column["id"]] = 2  # the call and its fresh-token retry both get 401
    graded(submit(browser, web_server, SLUG, {"x.grad": "7"}))
    failing = wait_for(lambda: ScoreDelivery.objects.filter(link__line_item_url=column["id"],
                                                            last_error__contains="401").first(),
                       what="the refusal recorded")
    assert failing.status == ScoreDelivery.Status.PENDING
    page = logged_in(instructor).get("/lti/courses/autograd-101/").content.decode()
    assert "answered 401" in page and student.user_id not in page  # the LMS id is not shown, the error is
    [score] = wait_for(lambda: scores_for(lti_platform, student.user_id, column["id"]), what="the retried score")
    assert score["scoreGiven"] == 1.0
    delivered = ScoreDelivery.objects.get(id=failing.id)
    assert delivered.status == ScoreDelivery.Status.SENT and delivered.tries == 2 and delivered.last_error == ""


def test_a_score_goes_only_to_the_column_of_the_students_own_lms_course(
        live_db: None, worker: Any, lti_platform: LmsPlatform, web_server: str) -> None:
    """Two LMS courses of one deployment use the demo course and link the same assignment, each to a
    column of its own: a student of course A never gets a score in course B's column."""
    from assignments.services import course_demo

    platform_register(lti_platform, course=course_demo().slug, contexts=("course-2",))
    link_a, link_b = f"link-{uuid.uuid4().hex[:8]}", f"link-{uuid.uuid4().hex[:8]}"
    column_a = line_item_create(state=lti_platform.state, base=lti_platform.url("/contexts/course-1/lineitems"),
                                body={"label": "Positive gradient", "scoreMaximum": 4, "resourceLinkId": link_a})
    column_b = line_item_create(state=lti_platform.state, base=lti_platform.url("/contexts/course-2/lineitems"),
                                body={"label": "Positive gradient", "scoreMaximum": 4, "resourceLinkId": link_b})
    teacher_b = LmsBrowser(lti_platform).launch(LaunchSpec(user=person(INSTRUCTOR), context_id="course-2",
                                                           resource_link_id=link_b, custom={"assignment": SLUG}))
    assert teacher_b.response.status_code == 302
    student = person()
    browser = LmsBrowser(lti_platform)
    assert browser.launch(LaunchSpec(user=student, resource_link_id=link_a,
                                     custom={"assignment": SLUG})).response.status_code == 302
    graded(submit(browser, web_server, SLUG, {"x.grad": "7"}))
    [score] = wait_for(lambda: scores_for(lti_platform, student.user_id, column_a["id"]), what="course A's score")
    assert score["scoreGiven"] == 1.0
    time.sleep(2)
    assert scores_for(lti_platform, student.user_id, column_b["id"]) == []
    assert not ScoreDelivery.objects.filter(user__lti_users__sub=student.user_id,
                                            link__line_item_url=column_b["id"]).exists()


def test_a_member_the_roster_no_longer_lists_leaves_the_course(
        live_db: None, worker: Any, lti_platform: LmsPlatform, instructor: Any) -> None:
    """Open edX leaves a dropped student out of the listing instead of marking them inactive; the listing
    comes in pages of two (`next` links), so the tool only knows who left once it has read them all."""
    stays, leaves = person(LEARNER, "Stay Here"), person(LEARNER, "Left Quietly")
    for member in (stays, leaves):
        lti_platform.enroll(member)
    LmsBrowser(lti_platform).launch(LaunchSpec(user=person(INSTRUCTOR), custom={"assignment": SLUG}))

    def in_course(member: Member) -> bool:
        return Membership.objects.filter(user__lti_users__sub=member.user_id, course__slug="autograd-101").exists()

    wait_for(lambda: in_course(stays) and in_course(leaves), what="both synced")
    del lti_platform.state.members[leaves.user_id]
    assert logged_in(instructor).post("/lti/courses/autograd-101/", {"retry": "roster"}).status_code == 302
    wait_for(lambda: not in_course(leaves), what="the unlisted member removed")
    assert in_course(stays)
    assert Membership.objects.filter(user=instructor.user, course__slug="autograd-101").exists()  # not from the LMS
