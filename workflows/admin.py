from django.contrib import admin

from workflows.models import Workflow, WorkflowVersion


@admin.register(Workflow)
class WorkflowAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "owner", "revision", "published_version", "updated")
    search_fields = ("name",)


@admin.register(WorkflowVersion)
class WorkflowVersionAdmin(admin.ModelAdmin):
    list_display = ("id", "workflow", "number", "draft_revision", "created")
