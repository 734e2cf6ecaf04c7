"""Staff pages under /staff/. COURSEOPS's roster/gradebook pages are included from here."""

from __future__ import annotations

from django.urls import path

from assignments.views import courses

urlpatterns = [
    path("", courses.staff_home, name="staff-home"),
    path("courses/<slug:course>/", courses.course_detail, name="staff-course"),
]
