from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from grader.models import ApiToken, Result, Submission
from infra import clock


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("id", "assignment", "student", "status", "attempt", "created_at")
    list_filter = ("status", "assignment")


admin.site.register(Result)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Only the hash is stored: the admin shows a prefix and can revoke, never reveal."""

    list_display = ("prefix", "user", "created_at", "expires_at", "revoked_at", "last_used_at")
    readonly_fields = ("prefix", "user", "created_at", "last_used_at")
    exclude = ("key_hash",)
    actions = ["revoke"]

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        queryset.filter(revoked_at=None).update(revoked_at=clock.now())

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # keys are created by `create_user --token`, which shows the key once
