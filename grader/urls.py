from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from grader import views
from grader.api.views import AssignmentAnswersGraph, SubmissionGraph

urlpatterns = [
    path("", views.home, name="home"),
    path("accounts/login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("assignments/<slug:slug>/", views.assignment_detail, name="assignment"),
    path("assignments/<slug:slug>/submissions/", views.assignment_history, name="assignment-history"),
    path("assignments/<slug:slug>/answers.svg", AssignmentAnswersGraph.as_view(), name="assignment-answers-graph"),
    path("submissions/<int:pk>/", views.submission_detail, name="submission"),
    path("submissions/<int:pk>/status/", views.submission_status, name="submission-status"),
    path("submissions/<int:pk>/graph.svg", SubmissionGraph.as_view(), name="submission-graph"),
    path("healthz", views.healthz, name="healthz"),
    path("healthz/live", views.healthz_live, name="healthz-live"),
    path("healthz/ready", views.healthz_ready, name="healthz-ready"),
]
