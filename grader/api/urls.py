"""/api/v1/: the student API. The staff APIs of course operations (courseops/api_urls.py) and
authoring (authoring/api_urls.py) share the prefix (config/urls.py)."""

from __future__ import annotations

from django.urls import path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.permissions import AllowAny

from grader.api import views

urlpatterns = [
    path("assignments/", views.AssignmentList.as_view(), name="api-assignments"),
    path("assignments/<slug:slug>/", views.AssignmentDetail.as_view(), name="api-assignment"),
    path("assignments/<slug:slug>/submissions/", views.SubmissionCollection.as_view(), name="api-submissions"),
    path("submissions/<int:pk>/", views.SubmissionDetail.as_view(), name="api-submission"),
    # The schema describes shapes only, so scripts may fetch it before they have a token.
    path("schema/", SpectacularAPIView.as_view(permission_classes=[AllowAny]), name="api-schema"),
]
