"""The course-operations API under /api/v1/ (included by grader/api/urls.py)."""

from __future__ import annotations

from django.urls import path

from courseops import api

urlpatterns = [
    path("courses/", api.CourseList.as_view(), name="api-courses"),
    path("courses/<slug:course>/gradebook/", api.Gradebook.as_view(), name="api-gradebook"),
    path("assignments/<slug:slug>/analytics/", api.Analytics.as_view(), name="api-analytics"),
    path("assignments/<slug:slug>/regrade/", api.RegradeCollection.as_view(), name="api-regrade"),
    path("assignments/<slug:slug>/regrade/<int:pk>/", api.RegradeDetail.as_view(), name="api-regrade-detail"),
]
