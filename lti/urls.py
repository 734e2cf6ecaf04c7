from __future__ import annotations

from django.urls import path

from lti import setup_views, staff_views, views

app_name = "lti"
urlpatterns = [
    path("login/", views.oidc_login, name="login"),
    path("launch/", views.launch, name="launch"),
    path("jwks/", views.jwks, name="jwks"),
    path("setup/", setup_views.setup_page, name="setup"),
    path("setup/canvas.json", setup_views.canvas_config, name="canvas-config"),
    path("bind/", staff_views.link_bind_page, name="bind"),
    path("deep-link/", staff_views.deep_link_page, name="deep-link"),
    path("courses/<slug:slug>/", staff_views.course_lms_page, name="course"),
]
