"""Invitations: after a roster enrolment, an email to each new account with a link to choose its password
(Django's password reset token, so the link works once and the account's first password is its own)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.mail import EmailMessage, get_connection
from django.template.loader import render_to_string
from django.urls import reverse

from assignments.access import made_by_lms
from assignments.models import Course, Membership
from grader.accounts import set_password_path

log = logging.getLogger(__name__)


@dataclass
class InvitationReport:
    sent: list[str] = field(default_factory=list)  # user names
    no_email: list[str] = field(default_factory=list)  # new accounts without an address: not invited
    failed: str = ""  # why the mail server took none of them, if it did not


def _inviter_name(inviter: AbstractBaseUser) -> str:
    full = getattr(inviter, "get_full_name", lambda: "")()
    return str(full or inviter.get_username())


def invitations_send(*, course: Course, usernames: list[str], base_url: str,
                     inviter: AbstractBaseUser) -> InvitationReport:
    """Email each of these accounts that has no password yet a link to choose one (over one connection).
    `base_url` is the site's address as the instructor reached it (scheme and host, no trailing slash)."""
    report = InvitationReport()
    users = (get_user_model().objects.filter(username__in=usernames, is_active=True)
             .exclude(made_by_lms()).order_by("username"))  # LMS accounts log in through the LMS
    days = max(1, settings.PASSWORD_RESET_TIMEOUT // (24 * 3600))
    context = {"course": course, "inviter": _inviter_name(inviter), "days": days,
               "login": base_url + reverse("login")}
    emails: list[EmailMessage] = []
    for user in users:
        if user.has_usable_password():  # an account that has its password already
            continue
        if not user.email:
            report.no_email.append(user.get_username())
            continue
        mine = {**context, "user": user, "link": base_url + set_password_path(user=user)}
        subject = " ".join(render_to_string("registration/invitation_subject.txt", mine).split())
        emails.append(EmailMessage(subject=subject, body=render_to_string("registration/invitation_email.txt", mine),
                                   to=[user.email]))
        report.sent.append(user.get_username())
    if emails:
        try:
            get_connection().send_messages(emails)
        except Exception as exc:  # the mail server refused, or is away or misconfigured: say so, never a 500
            log.warning("invitations to %s not sent: %s", course.slug, exc, exc_info=True)
            report.failed, report.sent = str(exc) or type(exc).__name__, []
    return report


def uninvited_students(*, course: Course) -> list[str]:
    """User names of the course's students who cannot log in yet: no password, not from an LMS."""
    users = (get_user_model().objects.filter(memberships__course=course, memberships__role=Membership.Role.STUDENT,
                                             is_active=True).exclude(made_by_lms()).order_by("username"))
    return [user.get_username() for user in users.only("username", "password") if not user.has_usable_password()]
