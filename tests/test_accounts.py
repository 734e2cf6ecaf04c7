"""Accounts people can use: a password reset by email with Django's own views (for accounts a roster
made without a password too, never for LMS-made ones), invitations from a roster enrolment, the email
settings read from the environment, and API tokens each user creates and revokes in the web UI."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from assignments.models import Course, Membership
from assignments.services import lms_person_set, membership_set
from grader import token_views
from grader.tokens import ApiToken
from tests.clients import logged_in

pytestmark = pytest.mark.django_db
LINK = re.compile(r"https?://testserver(/accounts/reset/[^/\s]+/[^/\s]+/)")


def _link(message: Any) -> str:
    found = LINK.search(message.body)
    assert found, message.body
    return found.group(1)


def _roster_user(email: str = "") -> Any:
    user = get_user_model().objects.create(username=f"newbie-{uuid.uuid4().hex[:8]}",
                                           email=email or f"{uuid.uuid4().hex[:8]}@school.edu")
    user.set_unusable_password()
    user.save()
    return user


def _set_password(link: str, password: str) -> Client:
    client = Client()
    form = client.get(link)  # Django swaps the token into the session and redirects to …/set-password/
    assert form.status_code == 302
    page = client.get(form["Location"])
    assert page.status_code == 200 and "Choose a password" in page.content.decode()
    done = client.post(form["Location"], {"new_password1": password, "new_password2": password})
    assert done.status_code == 302 and done["Location"] == "/accounts/reset/done/"
    return client


def test_the_login_page_links_to_a_password_reset_that_exists(client: Client) -> None:
    assert 'href="/accounts/password_reset/"' in client.get("/accounts/login/").content.decode()
    page = client.get("/accounts/password_reset/")
    assert page.status_code == 200 and 'name="email"' in page.content.decode()
    assert 'class="card narrow"' in page.content.decode()  # the login page's look


def test_an_account_without_a_password_gets_a_link_and_sets_its_password(client: Client) -> None:
    user = _roster_user()
    answer = client.post("/accounts/password_reset/", {"email": user.email.upper()})
    assert answer.status_code == 302 and answer["Location"] == "/accounts/password_reset/done/"
    assert len(mail.outbox) == 1 and mail.outbox[0].to == [user.email]
    assert user.username in mail.outbox[0].body
    link = _link(mail.outbox[0])
    _set_password(link, "a-long-new-password")
    user.refresh_from_db()
    assert user.check_password("a-long-new-password")
    login = Client().post("/accounts/login/", {"username": user.username, "password": "a-long-new-password"})
    assert login.status_code == 302 and login["Location"] == "/"
    page = Client().get(link, follow=True)  # used once: it does not work again
    assert "does not work any more" in page.content.decode()
    assert Client().get("/accounts/reset/done/").status_code == 200


def test_one_reset_email_per_address_in_a_while(client: Client) -> None:
    user = _roster_user()
    for _ in range(3):
        answer = client.post("/accounts/password_reset/", {"email": user.email})
        assert answer.status_code == 302 and answer["Location"] == "/accounts/password_reset/done/"
    assert len(mail.outbox) == 1  # the same answer each time, one email: nobody floods an inbox
    other = _roster_user()
    client.post("/accounts/password_reset/", {"email": other.email})
    assert len(mail.outbox) == 2


def test_no_email_for_lms_accounts_nor_unknown_addresses_and_the_same_answer(client: Client) -> None:
    lms = _roster_user()
    lms.username = f"lti-{uuid.uuid4().hex[:20]}"  # as a launch names the accounts it makes
    lms.save()
    lms_person_set(user=lms, lms_id="sub-x")
    linked = _roster_user()  # a roster account the LMS knows too keeps its password reset
    lms_person_set(user=linked, lms_id="sub-y")
    for email in (lms.email, "nobody@school.edu", linked.email):
        answer = client.post("/accounts/password_reset/", {"email": email})
        assert answer.status_code == 302 and answer["Location"] == "/accounts/password_reset/done/"
    assert [m.to for m in mail.outbox] == [[linked.email]]
    bad = client.post("/accounts/password_reset/", {"email": "not an address"})
    assert bad.status_code == 200 and 'value="not an address"' in bad.content.decode()  # kept, with its error


def test_a_mismatched_password_is_a_form_error_and_a_forged_link_a_readable_page() -> None:
    user = _roster_user()
    Client().post("/accounts/password_reset/", {"email": user.email})
    client = Client()
    form = client.get(_link(mail.outbox[0]))
    page = client.post(form["Location"], {"new_password1": "a-long-new-password", "new_password2": "other-one-1"})
    assert page.status_code == 200 and "alert" in page.content.decode()
    forged = Client().get("/accounts/reset/MQ/abc-def/", follow=True)
    assert forged.status_code == 200 and "does not work any more" in forged.content.decode()


def _settings_of(**env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("EMAIL_")}
    script = ("from django.conf import settings as s; "
              "print(s.EMAIL_BACKEND, s.EMAIL_HOST, s.EMAIL_PORT, s.EMAIL_USE_TLS, s.EMAIL_HOST_USER, "
              "s.DEFAULT_FROM_EMAIL)")
    out = subprocess.run([sys.executable, "-c", script], env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings",
                                                              "SECRET_KEY": "x", **env},
                         capture_output=True, text=True, check=True, timeout=60)
    return out.stdout.split()


def test_email_is_printed_on_the_console_until_an_smtp_host_is_set() -> None:
    assert _settings_of()[0] == "django.core.mail.backends.console.EmailBackend"
    smtp = _settings_of(EMAIL_HOST="smtp.school.edu", EMAIL_PORT="2525", EMAIL_USE_TLS="0",
                        EMAIL_HOST_USER="grader", DEFAULT_FROM_EMAIL="grader@school.edu")
    assert smtp == ["django.core.mail.backends.smtp.EmailBackend", "smtp.school.edu", "2525", "False", "grader",
                    "grader@school.edu"]


ROSTER = ("username,email,name,role,section\n{new},{new}@school.edu,New Bie,student,A\n{bare},,No Mail,student,A\n"
          "{old},,,student,B\n")


@pytest.fixture
def roster(make_user: Any) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:6]
    course = Course.objects.create(slug=f"inv-{tag}", title="Backprop & friends")
    instructor = make_user("instructor")
    membership_set(user=instructor.user, course=course, role="instructor")
    old = get_user_model().objects.create(username=f"old-{tag}", email="old@school.edu")
    old.set_unusable_password()
    old.save()
    names = {"new": f"new-{tag}", "bare": f"bare-{tag}", "old": old.username}
    return {"course": course, "instructor": instructor, "names": names, "csv": ROSTER.format(**names)}


def _apply(roster: Any, preview_says: str = "new accounts with an email address: 1 of 2", **extra: str) -> Any:
    client = logged_in(roster["instructor"])
    url = f"/staff/courses/{roster['course'].slug}/roster/"
    preview = client.post(url, {"csv": roster["csv"]})
    text = preview.content.decode()
    assert 'name="invite"' in text and preview_says in text
    return client.post(url, {"csv": roster["csv"], "apply": "1", **extra}, follow=True)


def test_a_roster_enrolment_invites_each_new_account_that_has_an_address(roster: Any) -> None:
    page = _apply(roster, invite="1")
    text = page.content.decode()
    assert page.status_code == 200 and "Invitations sent to 1 account." in text
    assert f"Not invited, no email address: {roster['names']['bare']}" in text
    assert [m.to for m in mail.outbox] == [[f"{roster['names']['new']}@school.edu"]]
    invitation = mail.outbox[0]
    assert invitation.subject == "You are invited to Backprop & friends on the Autograd grader"
    assert roster["names"]["new"] in invitation.body and "Backprop & friends" in invitation.body
    _set_password(_link(invitation), "my-first-password")
    new = get_user_model().objects.get(username=roster["names"]["new"])
    assert new.check_password("my-first-password")
    assert Membership.objects.get(user=new, course=roster["course"]).section == "A"


def test_no_invitation_unless_asked_and_a_mail_server_failure_is_a_message(roster: Any, monkeypatch: Any) -> None:
    page = _apply(roster)
    assert page.status_code == 200 and mail.outbox == [] and "Invitations" not in page.content.decode()
    assert get_user_model().objects.filter(username=roster["names"]["new"]).exists()

    class Refusing:
        def send_messages(self, messages: Any) -> int:
            raise ConnectionRefusedError("connection refused")

    monkeypatch.setattr("courseops.invitations.get_connection", lambda: Refusing())
    roster["csv"] = roster["csv"].replace(roster["names"]["new"], roster["names"]["new"] + "-2")
    page = _apply(roster, preview_says="new accounts with an email address: 1 of 1", invite="1")
    assert page.status_code == 200 and "No invitation was sent" in page.content.decode()
    assert get_user_model().objects.filter(username=roster["names"]["new"] + "-2").exists()


def test_students_who_cannot_log_in_yet_are_invited_later_from_the_roster(roster: Any, make_user: Any) -> None:
    _apply(roster)  # enrolled without invitations
    lms = get_user_model().objects.create(username=f"lti-{uuid.uuid4().hex[:12]}", email="lms@school.edu")
    lms.set_unusable_password()
    lms.save()
    lms_person_set(user=lms, lms_id="sub-lms")
    membership_set(user=lms, course=roster["course"], role="student")
    url = f"/staff/courses/{roster['course'].slug}/roster/"
    client = logged_in(roster["instructor"])
    assert "3 students cannot log in yet" in client.get(url).content.decode()  # new, bare, old; not the LMS one
    ta = make_user("ta")
    membership_set(user=ta.user, course=roster["course"], role="ta")
    assert logged_in(ta).post(url, {"invite_waiting": "1"}).status_code == 403
    page = client.post(url, {"invite_waiting": "1"}, follow=True)
    text = page.content.decode()
    assert "Invitations sent to 2 accounts." in text
    assert f"Not invited, no email address: {roster['names']['bare']}" in text
    assert sorted(m.to[0] for m in mail.outbox) == sorted([f"{roster['names']['new']}@school.edu", "old@school.edu"])
    _set_password(_link(next(m for m in mail.outbox if m.to == ["old@school.edu"])), "old-one-now-set")
    assert "2 students cannot log in yet" in client.get(url).content.decode()


def test_a_user_creates_a_token_sees_its_key_once_and_uses_it(student: Any) -> None:
    client = logged_in(student)
    assert 'href="/accounts/tokens/"' in client.get("/").content.decode()  # linked from the header
    page = client.get("/accounts/tokens/")
    existing = ApiToken.objects.get(user=student.user)
    assert page.status_code == 200 and f"{existing.prefix}…" in page.content.decode()
    created = client.post("/accounts/tokens/", {"days": "30"})
    text = created.content.decode()
    key = re.search(r'<code class="token-key" id="token-key">([^<]+)</code>', text).group(1)  # type: ignore[union-attr]
    assert "no-store" in created["Cache-Control"] or "no-cache" in created["Cache-Control"]
    token = ApiToken.objects.get(user=student.user, prefix=key[:8])
    assert abs(token.expires_at - (timezone.now() + timedelta(days=30))) < timedelta(minutes=1)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/v1/assignments/").status_code == 200
    assert key not in client.get("/accounts/tokens/").content.decode()  # shown once


def test_a_bad_lifetime_keeps_what_was_typed_and_creates_nothing(student: Any) -> None:
    client = logged_in(student)
    before = ApiToken.objects.filter(user=student.user).count()
    for typed in ("1000", "0", "soon"):
        page = client.post("/accounts/tokens/", {"days": typed})
        assert page.status_code == 400 and f'value="{typed}"' in page.content.decode(), typed
    assert ApiToken.objects.filter(user=student.user).count() == before


def test_a_user_revokes_their_own_token_only(student: Any, other_student: Any) -> None:
    client = logged_in(student)
    mine = ApiToken.objects.get(user=student.user)
    theirs = ApiToken.objects.get(user=other_student.user)
    assert client.post(f"/accounts/tokens/{theirs.id}/revoke/").status_code == 404
    assert client.post(f"/accounts/tokens/{10**30}/revoke/").status_code == 404  # past any database integer
    assert client.get(f"/accounts/tokens/{mine.id}/revoke/").status_code == 405
    page = client.post(f"/accounts/tokens/{mine.id}/revoke/", follow=True)
    assert page.status_code == 200 and "revoked" in page.content.decode()
    api = APIClient(REMOTE_ADDR=f"10.66.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}")  # its own lockout count
    api.credentials(HTTP_AUTHORIZATION=f"Token {student.token}")
    assert api.get("/api/v1/assignments/").status_code == 401
    api.credentials(HTTP_AUTHORIZATION=f"Token {other_student.token}")
    assert api.get("/api/v1/assignments/").status_code == 200
    assert client.post(f"/accounts/tokens/{mine.id}/revoke/", follow=True).status_code == 200  # again: no error


def test_tokens_need_a_login_and_are_capped(student: Any, monkeypatch: Any) -> None:
    assert Client().get("/accounts/tokens/")["Location"].startswith("/accounts/login/")
    monkeypatch.setattr(token_views, "MAX_ACTIVE", 2)
    client = logged_in(student)
    assert client.post("/accounts/tokens/", {"days": "5"}).status_code == 200  # the second active one
    refused = client.post("/accounts/tokens/", {"days": "5"})
    assert refused.status_code == 400 and "revoke one" in refused.content.decode()
    ApiToken.objects.filter(user=student.user, prefix=student.token[:8]).update(
        expires_at=timezone.now() - timedelta(seconds=1))
    assert client.post("/accounts/tokens/", {"days": "5"}).status_code == 200  # an expired one does not count
    assert ApiToken.objects.filter(user=student.user).count() == 3
