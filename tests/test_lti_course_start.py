"""A course an LMS's first launch created starts from a copy of the instructor's course or of the catalog."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from assignments.models import Assignment, Course, Membership
from lti.models import ContextCourse
from tests.lti_platform.inprocess import Platform
from tests.lti_platform.launches import INSTRUCTOR


def _instructor_launch(platform: Platform, client: Client, *, context_id: str) -> Course:
    reply = platform.launch(client=client, user_id="lms-teacher", instructor=True, context_id=context_id,
                            resource_link_id=f"link-{uuid.uuid4().hex[:6]}")
    assert reply.status_code == 302 and reply["Location"] == "/lti/bind/"
    return ContextCourse.objects.get(context__id_on_platform=context_id,
                                     context__deployment=platform.deployment).course


@pytest.mark.django_db
def test_an_instructor_fills_an_lms_made_course_from_the_catalog_then_from_their_other_course() -> None:
    platform, client = Platform().register(), Client()
    first = _instructor_launch(platform, client, context_id="ctx-a")
    offer = client.get("/lti/bind/").content.decode()
    assert "has no assignments yet" in offer and 'value="catalog" checked' in offer
    done = client.post(f"/lti/courses/{first.slug}/start/", {"source": "catalog", "return_to": "bind"}, follow=True)
    page = done.content.decode()
    assert done.redirect_chain[-1][0] == "/lti/bind/" and "Copied" in page
    copied = set(first.assignments.values_list("slug", flat=True))
    assert f"positive-gradient-{first.slug}" in copied and f'value="positive-gradient-{first.slug}"' in page

    second = _instructor_launch(platform, client, context_id="ctx-b")
    offer = client.get("/lti/bind/").content.decode()
    assert f'value="{first.pk}" checked' in offer  # their own course, offered first
    client.post(f"/lti/courses/{second.slug}/start/", {"source": str(first.pk), "return_to": "bind"})
    assert second.assignments.count() == len(copied)
    assert Assignment.objects.filter(course=first).count() == len(copied)  # the source is untouched


@pytest.mark.django_db
def test_the_copy_is_refused_to_students_into_full_courses_and_from_courses_not_theirs(instructor: Any) -> None:
    platform, client = Platform().register(), Client()
    course = _instructor_launch(platform, client, context_id="ctx-c")
    stranger_course = instructor.user.memberships.get().course
    refused = client.post(f"/lti/courses/{course.slug}/start/", {"source": str(stranger_course.pk)})
    assert refused.status_code == 400 and b"Choose one of your courses" in refused.content
    assert not course.assignments.exists()
    student = Client()
    student.force_login(get_user_model().objects.create_user(username=f"s-{uuid.uuid4().hex[:8]}"))
    Membership.objects.create(user_id=student.session["_auth_user_id"], course=course, role="student")
    assert student.post(f"/lti/courses/{course.slug}/start/", {"source": "catalog"}).status_code == 403
    client.post(f"/lti/courses/{course.slug}/start/", {"source": "catalog"})
    again = client.post(f"/lti/courses/{course.slug}/start/", {"source": "catalog"})
    assert again.status_code == 400 and b"has assignments already" in again.content


DL = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"


@pytest.mark.django_db
def test_deep_linking_from_an_empty_lms_course_offers_the_copy_then_the_copied_assignments() -> None:
    platform, client = Platform().register(), Client()
    state, nonce = platform.login(client, user_id="lms-dl-teacher")
    body = platform.body(nonce=nonce, user_id="lms-dl-teacher", roles=(INSTRUCTOR,), context_id="ctx-dl")
    del body["https://purl.imsglobal.org/spec/lti/claim/resource_link"]
    body["https://purl.imsglobal.org/spec/lti/claim/message_type"] = "LtiDeepLinkingRequest"
    body[DL] = {"deep_link_return_url": f"{platform.base}/deep_link_return", "accept_types": ["ltiResourceLink"],
                "accept_multiple": True, "accept_presentation_document_targets": ["iframe", "window"]}
    reply = platform.post(client, state=state, header=platform.header(), body=body)
    assert reply.status_code == 302 and reply["Location"] == "/lti/deep-link/", reply.content.decode()[-800:]
    course = ContextCourse.objects.get(context__id_on_platform="ctx-dl").course
    assert "has no assignments yet" in client.get("/lti/deep-link/").content.decode()
    done = client.post(f"/lti/courses/{course.slug}/start/", {"source": "catalog", "return_to": "deep-link"},
                       follow=True)
    assert done.redirect_chain[-1][0] == "/lti/deep-link/"
    assert f'type="checkbox" name="assignment" value="positive-gradient-{course.slug}"' in done.content.decode()
