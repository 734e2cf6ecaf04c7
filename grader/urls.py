from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from grader import token_views, views
from grader.accounts import AccountPasswordResetForm
from grader.api.views import AssignmentAnswersGraph, SubmissionGraph

urlpatterns = [
    path("", views.home, name="home"),
    path("accounts/login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Django's own password reset views and names (django.contrib.auth.urls), with our templates
    path("accounts/password_reset/", auth_views.PasswordResetView.as_view(form_class=AccountPasswordResetForm),
         name="password_reset"),
    path("accounts/password_reset/done/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path("accounts/reset/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(),
         name="password_reset_confirm"),
    path("accounts/reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
    path("accounts/tokens/", token_views.token_list, name="tokens"),
    path("accounts/tokens/<int:pk>/revoke/", token_views.token_revoke_view, name="token-revoke"),
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
