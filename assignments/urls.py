"""Staff pages under /staff/: courses, authoring. Course operations (courseops.urls) share the prefix."""

from __future__ import annotations

from django.urls import path

from assignments.views import authoring, courses, jobs

urlpatterns = [
    path("", courses.staff_home, name="staff-home"),
    path("courses/new/", authoring.course_create, name="staff-course-new"),
    path("courses/<slug:course>/", courses.course_detail, name="staff-course"),
    path("courses/<slug:course>/staff/", authoring.course_staff, name="staff-course-staff"),
    path("courses/<slug:course>/assignments/new/", authoring.assignment_create, name="staff-assignment-new"),
    path("courses/<slug:course>/export.zip", authoring.course_export, name="staff-course-export"),
    path("courses/<slug:course>/import/", authoring.course_import, name="staff-course-import"),
    path("assignments/<slug:slug>/edit/", authoring.assignment_edit, name="staff-assignment-edit"),
    path("assignments/<slug:slug>/preview/", authoring.assignment_preview, name="staff-assignment-preview"),
    path("assignments/<slug:slug>/publish/", authoring.assignment_publish, name="staff-assignment-publish"),
    path("assignments/<slug:slug>/duplicate/", authoring.assignment_duplicate, name="staff-assignment-duplicate"),
    path("assignments/<slug:slug>/delete/", authoring.assignment_delete, name="staff-assignment-delete"),
    path("assignments/<slug:slug>/restore/", authoring.assignment_restore, name="staff-assignment-restore"),
    path("assignments/<slug:slug>/export.toml", authoring.assignment_export, name="staff-assignment-export"),
    path("assignments/<slug:slug>/extensions/", authoring.assignment_extensions, name="staff-assignment-extensions"),
    path("jobs/<int:pk>/", jobs.job_detail, name="staff-job"),
]
