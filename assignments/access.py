"""Who may see which course: the one place course roles are turned into querysets and 404s.

Pure reads, no views. Staff pages and the staff API call the `*_or_404` functions, so a
course the user has no staff role in is indistinguishable from a course that does not
exist (404), while a student of the course learns only that the page is not for them (403).
"""

from __future__ import annotations

import re
from typing import TypeAlias

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.http import Http404

from assignments.models import Assignment, Course, Membership

User: TypeAlias = "AbstractBaseUser | AnonymousUser"
STAFF_ROLES: tuple[str, ...] = (str(Membership.Role.TA), str(Membership.Role.INSTRUCTOR))
USERNAME_RE = re.compile(r"^[\w.@+-]{1,150}$")  # a user name we create: Django's characters, its 150 at most
LMS_USERNAME_PREFIX = "lti-"  # the user names of accounts an LMS made: lti-<digest of platform and user id>


def _roles(*, authoring: bool) -> tuple[str, ...]:
    return (str(Membership.Role.INSTRUCTOR),) if authoring else STAFF_ROLES


def course_role(*, user: User, course: Course) -> str | None:
    """The user's role in this course, or None when they have none."""
    if not user.is_authenticated:
        return None
    role: str | None = (
        Membership.objects.filter(user_id=user.pk, course=course).values_list("role", flat=True).first()
    )
    return role


def courses_for(*, user: User) -> QuerySet[Course]:
    """Every course the user has any role in."""
    return Course.objects.filter(memberships__user_id=user.pk).distinct().order_by("title")


def staff_courses(*, user: User, authoring: bool = False) -> QuerySet[Course]:
    """Courses the user is a TA or instructor of (`authoring=True`: instructor only)."""
    return Course.objects.filter(
        memberships__user_id=user.pk, memberships__role__in=_roles(authoring=authoring)
    ).distinct().order_by("title")


def _deny_or_hide(*, user: User, course: Course | None, authoring: bool) -> None:
    """Raise unless the user holds a staff role (an authoring one if asked) in `course`."""
    role = course_role(user=user, course=course) if course is not None else None
    if role is None:
        raise Http404("No such course.")
    if role not in _roles(authoring=authoring):
        raise PermissionDenied("This page is for the course's instructors." if authoring and role in STAFF_ROLES
                               else "This page is for the course's staff.")


def course_for_staff_or_404(*, user: User, slug: str, authoring: bool = False) -> Course:
    course = Course.objects.filter(slug=slug).first()
    _deny_or_hide(user=user, course=course, authoring=authoring)
    assert course is not None
    return course


def assignment_for_staff_or_404(*, user: User, slug: str, authoring: bool = False) -> Assignment:
    assignment = Assignment.objects.select_related("course").filter(slug=slug).first()
    _deny_or_hide(user=user, course=assignment.course if assignment else None, authoring=authoring)
    assert assignment is not None
    return assignment


def is_course_staff(*, user: User, course_id: int | None) -> bool:
    """TA or instructor of the course with this id (grading views, expected values)."""
    return Membership.objects.filter(user_id=user.pk, course_id=course_id, role__in=STAFF_ROLES).exists()


def may_create_courses(*, user: User) -> bool:
    """Whether the user may create a course at /staff/courses/new/ (GRADER_COURSE_CREATORS).

    "staff": site staff and superusers, holders of `assignments.add_course` (given in the admin) and
    the users named in GRADER_COURSE_CREATOR_USERS. "instructors": those, and every instructor of a course.
    """
    if not user.is_authenticated:
        return False
    if getattr(user, "is_staff", False) or getattr(user, "is_superuser", False) \
            or user.has_perm("assignments.add_course") \
            or user.get_username() in settings.GRADER_COURSE_CREATOR_USERS:
        return True
    return settings.GRADER_COURSE_CREATORS == "instructors" and Membership.objects.filter(
        user_id=user.pk, role=Membership.Role.INSTRUCTOR).exists()


def by_course_staff() -> Exists:
    """For a query over submissions: whether its author is staff (TA or instructor) of the submission's
    course. What staff submit through the student view is a trial, not a student's attempt: the
    gradebook, its exports, the analytics and the staff lists leave it out."""
    return Exists(Membership.objects.filter(user_id=OuterRef("student_id"), course_id=OuterRef("assignment__course_id"),
                                            role__in=STAFF_ROLES))


def made_by_lms() -> Q:
    """For a query over users: accounts an LMS launch or roster sync made. They log in through the LMS and
    their user name is ours, not the school's; an account made otherwise and known to an LMS is not one."""
    return Q(lms_person__isnull=False, username__startswith=LMS_USERNAME_PREFIX)
