"""django-lti registers registrations, deployments and keys; these are the tool's own rows."""

from __future__ import annotations

from django.contrib import admin

from lti.models import ContextCourse, CourseLmsOptions, FrameOrigin, LinkAssignment, ScoreDelivery, ServiceHost


@admin.register(ContextCourse)
class ContextCourseAdmin(admin.ModelAdmin):
    list_display = ("context", "course", "roster_synced_at", "roster_error")


@admin.register(LinkAssignment)
class LinkAssignmentAdmin(admin.ModelAdmin):
    list_display = ("resource_link", "assignment", "line_item_url")


@admin.register(FrameOrigin)
class FrameOriginAdmin(admin.ModelAdmin):
    list_display = ("registration", "origin")


@admin.register(ServiceHost)
class ServiceHostAdmin(admin.ModelAdmin):
    list_display = ("registration", "host")


@admin.register(ScoreDelivery)
class ScoreDeliveryAdmin(admin.ModelAdmin):
    list_display = ("user", "link", "score_given", "score_maximum", "status", "tries", "last_error")
    list_filter = ("status",)


@admin.register(CourseLmsOptions)
class CourseLmsOptionsAdmin(admin.ModelAdmin):
    list_display = ("course", "link_roster_accounts")
