"""The authoring API under /api/v1/staff/ (included by grader/api/urls.py)."""

from __future__ import annotations

from django.urls import path

from authoring import api

urlpatterns = [
    path("courses/<slug:course>/copy/", api.CourseCopyView.as_view(), name="api-course-copy"),
    path("staff/courses/<slug:course>/assignments/", api.AuthoredCollection.as_view(), name="api-staff-assignments"),
    path("staff/courses/<slug:course>/feedback/", api.CourseFeedback.as_view(), name="api-staff-course-feedback"),
    path("staff/assignments/<slug:slug>/", api.AuthoredDetail.as_view(), name="api-staff-assignment"),
    path("staff/assignments/<slug:slug>/publish/", api.AuthoredPublish.as_view(), name="api-staff-publish"),
    path("staff/jobs/<int:pk>/", api.AuthoringJobDetail.as_view(), name="api-staff-job"),
]
