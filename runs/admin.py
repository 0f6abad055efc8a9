from django.contrib import admin

from runs.models import Message, Run, RunStep, Thread


class MessageInline(admin.TabularInline):
    model = Message
    extra = 0
    readonly_fields = ("seq", "role", "content", "run", "created")


@admin.register(Thread)
class ThreadAdmin(admin.ModelAdmin):
    list_display = ("id", "workflow", "owner", "participant", "title", "last_seq", "updated")
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
