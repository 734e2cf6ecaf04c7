"""LMS accounts linked to roster accounts: a launch that matches a roster student of its course uses that
account (when the course's instructors allow it), and instructors link an LMS account to one by hand.

No account takeover: only a roster account that is a student of this course and of no other course, not
site staff, not made by an LMS and not linked to another LMS person yet can be linked.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser
from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet
from lti_tool.models import LtiUser

from assignments.access import made_by_lms
from assignments.models import Course, LmsPerson, Membership
from assignments.services import lms_person_set
from grader.models import Submission
from lti.models import CourseLmsOptions


class LinkRefused(Exception):
    """A link the tool will not make; the message says why (shown to the instructor)."""


def linking_allowed(*, course: Course) -> bool:
    return CourseLmsOptions.objects.filter(course=course, link_roster_accounts=True).exists()


def linking_allow(*, course: Course, allowed: bool) -> None:
    CourseLmsOptions.objects.update_or_create(course=course, defaults={"link_roster_accounts": allowed})


def roster_accounts_linkable(*, course: Course) -> QuerySet[AbstractUser]:
    """Students of this course only, not site staff, not LMS-made, not yet linked to an LMS person."""
    elsewhere = Membership.objects.filter(user_id=OuterRef("pk")).exclude(course=course)
    linked = LtiUser.objects.filter(auth_user_id=OuterRef("pk"))
    return (get_user_model().objects
            .filter(memberships__course=course, memberships__role=Membership.Role.STUDENT, is_active=True,
                    is_staff=False, is_superuser=False)
            .exclude(made_by_lms()).exclude(Exists(elsewhere)).exclude(Exists(linked)).order_by("username"))


def lms_accounts_of(*, course: Course) -> QuerySet[AbstractUser]:
    """Accounts an LMS made that are students of this course and of no other (those an instructor may link
    by hand): the link moves the LMS person's every launch to the roster account, so a person who also
    studies or teaches elsewhere is not this instructor's to move."""
    elsewhere = Membership.objects.filter(user_id=OuterRef("pk")).exclude(course=course)
    return (get_user_model().objects.filter(made_by_lms(), memberships__course=course,
                                            memberships__role=Membership.Role.STUDENT, is_staff=False,
                                            is_superuser=False)
            .exclude(Exists(elsewhere)).select_related("lms_person").order_by("last_name", "first_name", "username"))


def roster_account_for_launch(*, course: Course, lms_id: str, sis_id: str, email: str) -> AbstractUser | None:
    """The one linkable roster account of this course the launching person matches (by the LMS person id
    stored with it, then by the email the LMS sent), when the course allows it; None when none or several."""
    if not linking_allowed(course=course):
        return None
    rows = roster_accounts_linkable(course=course)
    ids = LmsPerson.objects.filter(lms_id=lms_id) if lms_id else LmsPerson.objects.none()
    if sis_id:
        ids = ids | LmsPerson.objects.filter(sis_id=sis_id)
    for matches in (rows.filter(lms_person__in=ids), rows.filter(email__iexact=email) if email else rows.none()):
        found = list(matches[:2])
        if len(found) == 1:
            return found[0]
    return None


@transaction.atomic
def account_link(*, course: Course, lms_account_id: int, roster_account_id: int) -> str:
    """Make the LMS person behind `lms_account_id` launch as the roster account from now on; says what it did."""
    lms_account = lms_accounts_of(course=course).filter(pk=lms_account_id).first()
    if lms_account is None:
        raise LinkRefused("That LMS account is not a student of this course only.")
    roster_account = roster_accounts_linkable(course=course).select_for_update(of=("self",)).filter(
        pk=roster_account_id).first()
    if roster_account is None:
        raise LinkRefused("That roster account cannot be linked: it must be a student of this course only, "
                          "not staff, and not linked to an LMS person already.")
    LtiUser.objects.filter(auth_user=lms_account).update(auth_user=roster_account)
    person = LmsPerson.objects.filter(user=lms_account).first()
    if person is not None:
        lms_person_set(user=roster_account, lms_id=person.lms_id, sis_id=person.sis_id)
    Membership.objects.get_or_create(user=roster_account, course=course,
                                     defaults={"role": Membership.Role.STUDENT})
    if Submission.objects.filter(student=lms_account, assignment__course=course).exists():
        return (f"Linked: {roster_account.get_username()} is used from the LMS's next launch on. The LMS account "
                f"keeps the submissions it made and stays on the roster.")
    Membership.objects.filter(user=lms_account, course=course).delete()
    return f"Linked: {roster_account.get_username()} is used from the LMS's next launch on."
