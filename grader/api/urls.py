from __future__ import annotations

from django.urls import path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.permissions import AllowAny

from grader.api import authoring_views, staff_views, views

urlpatterns = [
    path("assignments/", views.AssignmentList.as_view(), name="api-assignments"),
    path("assignments/<slug:slug>/", views.AssignmentDetail.as_view(), name="api-assignment"),
    path("assignments/<slug:slug>/submissions/", views.SubmissionCollection.as_view(), name="api-submissions"),
    path("submissions/<int:pk>/", views.SubmissionDetail.as_view(), name="api-submission"),
    path("courses/", staff_views.CourseList.as_view(), name="api-courses"),
    path("courses/<slug:course>/gradebook/", staff_views.Gradebook.as_view(), name="api-gradebook"),
    path("assignments/<slug:slug>/analytics/", staff_views.Analytics.as_view(), name="api-analytics"),
    path("assignments/<slug:slug>/regrade/", staff_views.RegradeCollection.as_view(), name="api-regrade"),
    path("assignments/<slug:slug>/regrade/<int:pk>/", staff_views.RegradeDetail.as_view(), name="api-regrade-detail"),
    path("staff/courses/<slug:course>/assignments/", authoring_views.AuthoredCollection.as_view(),
         name="api-staff-assignments"),
    path("staff/assignments/<slug:slug>/", authoring_views.AuthoredDetail.as_view(), name="api-staff-assignment"),
    path("staff/assignments/<slug:slug>/publish/", authoring_views.AuthoredPublish.as_view(),
         name="api-staff-publish"),
    path("staff/jobs/<int:pk>/", authoring_views.AuthoringJobDetail.as_view(), name="api-staff-job"),
    # The schema describes shapes only, so scripts may fetch it before they have a token.
    path("schema/", SpectacularAPIView.as_view(permission_classes=[AllowAny]), name="api-schema"),
]
