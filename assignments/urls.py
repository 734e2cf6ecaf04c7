"""Staff pages under /staff/: the staff home and course pages. Authoring (authoring.urls) and course
operations (courseops.urls) share the prefix."""

from __future__ import annotations

from django.urls import path

from assignments.views import courses

urlpatterns = [
    path("", courses.staff_home, name="staff-home"),
    path("courses/<slug:course>/", courses.course_detail, name="staff-course"),
]
