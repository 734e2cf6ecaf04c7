from __future__ import annotations

from django.contrib import admin
from django.urls import include, path
from django.views.generic import TemplateView

from grader.metrics_view import metrics

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("grader.api.urls")),  # the student API, and the schema of all three
    path("api/v1/", include("courseops.api_urls")),
    path("api/v1/", include("authoring.api_urls")),
    path("api/docs/", TemplateView.as_view(template_name="api_docs.html"), name="api-docs"),  # the schema, drawn
    path("staff/", include("authoring.urls")),  # first: courses/new/ is not a course's slug
    path("staff/", include("assignments.urls")),  # staff home, course pages
    path("staff/", include("courseops.urls")),  # roster, gradebook, analytics, regrades
    path("lti/", include("lti.urls")),
    path("metrics", metrics, name="metrics"),
    path("", include("grader.urls")),
]
handler500 = "grader.unavailable.server_error"
