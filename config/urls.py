from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("grader.api.urls")),
    path("staff/", include("assignments.urls")),
    path("lti/", include("lti.urls")),
    path("", include("grader.urls")),
]
