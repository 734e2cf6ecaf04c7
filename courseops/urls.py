"""Course operations pages, under /staff/ beside the authoring pages (config/urls.py)."""

from __future__ import annotations

from django.urls import path

from courseops.views import analytics, gradebook, regrades, roster, submissions

urlpatterns = [
    path("courses/<slug:course>/roster/", roster.roster_page, name="courseops-roster"),
    path("courses/<slug:course>/gradebook/", gradebook.gradebook_page, name="courseops-gradebook"),
    path("courses/<slug:course>/students/<str:username>/", gradebook.student_page, name="courseops-student"),
    path("assignments/<slug:slug>/submissions/", submissions.submission_list, name="courseops-submissions"),
    path("assignments/<slug:slug>/analytics/", analytics.analytics_page, name="courseops-analytics"),
    path("assignments/<slug:slug>/regrades/", regrades.regrade_list, name="courseops-regrades"),
    path("assignments/<slug:slug>/regrades/<int:pk>/", regrades.regrade_detail, name="courseops-regrade"),
    path("assignments/<slug:slug>/regrades/<int:pk>/apply/", regrades.regrade_apply_view,
         name="courseops-regrade-apply"),
    path("submissions/<int:pk>/", submissions.submission_page, name="courseops-submission"),
    path("submissions/<int:pk>/override/", submissions.override_create, name="courseops-override"),
    path("submissions/<int:pk>/regrade/", submissions.submission_regrade, name="courseops-submission-regrade"),
]
