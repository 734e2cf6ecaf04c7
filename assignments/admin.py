from __future__ import annotations

from django.contrib import admin

from assignments.models import Assignment, Course, LmsPerson, Membership, Part, Variant


class PartInline(admin.TabularInline):
    model = Part
    extra = 0


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "course", "due_at", "max_attempts", "published")
    search_fields = ("slug", "title")
    inlines = [PartInline]


@admin.register(Variant)
class VariantAdmin(admin.ModelAdmin):
    list_display = ("assignment", "params", "computed_at", "error")
    readonly_fields = ("analysis",)


admin.site.register(Course)
admin.site.register(Membership)


@admin.register(LmsPerson)
class LmsPersonAdmin(admin.ModelAdmin):
    list_display = ("user", "lms_id", "sis_id", "updated_at")
    search_fields = ("user__username", "lms_id", "sis_id")
