from __future__ import annotations

from django.urls import path

from lti import platform_views, setup_views, staff_views, views

app_name = "lti"
urlpatterns = [
    path("login/", views.oidc_login, name="login"),
    path("launch/", views.launch, name="launch"),
    path("jwks/", views.jwks, name="jwks"),
    path("setup/", setup_views.setup_page, name="setup"),
    path("setup/canvas.json", setup_views.canvas_config, name="canvas-config"),
    path("register/<str:token>/", setup_views.dynamic_registration, name="register"),
    path("platforms/", platform_views.platforms_page, name="platforms"),
    path("platforms/<int:pk>/", platform_views.platform_page, name="platform"),
    path("bind/", staff_views.link_bind_page, name="bind"),
    path("deep-link/", staff_views.deep_link_page, name="deep-link"),
    path("courses/<slug:slug>/", staff_views.course_lms_page, name="course"),
    path("courses/<slug:slug>/start/", staff_views.course_start_page, name="course-start"),
]
