from django.contrib import admin

from .models import Message, Provider, Run, RunStep, Thread, Workflow, WorkflowVersion


@admin.register(Provider)
class ProviderAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "kind", "api_base", "owner", "has_api_key")
    exclude = ("api_key_encrypted",)


@admin.register(Workflow)
class WorkflowAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "owner", "revision", "published_version", "updated")
    search_fields = ("name",)


@admin.register(WorkflowVersion)
class WorkflowVersionAdmin(admin.ModelAdmin):
    list_display = ("id", "workflow", "number", "draft_revision", "created")


class MessageInline(admin.TabularInline):
    model = Message
    extra = 0
    readonly_fields = ("seq", "role", "content", "run", "created")


@admin.register(Thread)
class ThreadAdmin(admin.ModelAdmin):
    list_display = ("id", "workflow", "owner", "title", "last_seq", "updated")
    inlines = [MessageInline]


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ("id", "thread", "seq", "role", "run", "created")


class RunStepInline(admin.TabularInline):
    model = RunStep
    extra = 0
    readonly_fields = ("node", "type", "position", "status", "duration_ms", "error")


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "workflow", "trigger", "status", "thread", "attempts", "created", "finished")
    list_filter = ("status", "trigger")
    inlines = [RunStepInline]


@admin.register(RunStep)
class RunStepAdmin(admin.ModelAdmin):
    list_display = ("id", "run", "node", "type", "status", "duration_ms")
