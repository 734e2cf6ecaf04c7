"""Authoring pages under /staff/: new courses and assignments, editing, preview, publishing, import and
export, extensions, and the page of an authoring job."""

from __future__ import annotations

from django.urls import path

from authoring import copy_views, extension_views, job_views, views

urlpatterns = [
    path("courses/new/", views.course_create, name="staff-course-new"),
    path("courses/<slug:course>/copy/", copy_views.course_copy_page, name="staff-course-copy"),
    path("courses/<slug:course>/staff/", views.course_staff, name="staff-course-staff"),
    path("courses/<slug:course>/feedback/", views.course_feedback, name="staff-course-feedback"),
    path("courses/<slug:course>/assignments/new/", views.assignment_create, name="staff-assignment-new"),
    path("courses/<slug:course>/export.zip", views.course_export, name="staff-course-export"),
    path("courses/<slug:course>/import/", views.course_import, name="staff-course-import"),
    path("assignments/<slug:slug>/edit/", views.assignment_edit, name="staff-assignment-edit"),
    path("assignments/<slug:slug>/preview/", views.assignment_preview, name="staff-assignment-preview"),
    path("assignments/<slug:slug>/publish/", views.assignment_publish, name="staff-assignment-publish"),
    path("assignments/<slug:slug>/duplicate/", views.assignment_duplicate, name="staff-assignment-duplicate"),
    path("assignments/<slug:slug>/delete/", views.assignment_delete, name="staff-assignment-delete"),
    path("assignments/<slug:slug>/restore/", views.assignment_restore, name="staff-assignment-restore"),
    path("assignments/<slug:slug>/export.toml", views.assignment_export, name="staff-assignment-export"),
    path("assignments/<slug:slug>/extensions/", extension_views.assignment_extensions,
         name="staff-assignment-extensions"),
    path("jobs/<int:pk>/", job_views.job_detail, name="staff-job"),
]
