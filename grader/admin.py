from __future__ import annotations

from django.contrib import admin

from grader.models import Result, Submission


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("id", "assignment", "student", "status", "attempt", "created_at")
    list_filter = ("status", "assignment")


admin.site.register(Result)
