"""/api/v1/: the student API here; the staff APIs of course operations and authoring are included
from their own apps, under the same prefix."""

from __future__ import annotations

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.permissions import AllowAny

from grader.api import views

urlpatterns = [
    path("assignments/", views.AssignmentList.as_view(), name="api-assignments"),
    path("assignments/<slug:slug>/", views.AssignmentDetail.as_view(), name="api-assignment"),
    path("assignments/<slug:slug>/submissions/", views.SubmissionCollection.as_view(), name="api-submissions"),
    path("submissions/<int:pk>/", views.SubmissionDetail.as_view(), name="api-submission"),
    path("", include("courseops.api_urls")),
    path("", include("authoring.api_urls")),
    # The schema describes shapes only, so scripts may fetch it before they have a token.
    path("schema/", SpectacularAPIView.as_view(permission_classes=[AllowAny]), name="api-schema"),
]
