from django.contrib import admin

from memory.models import Fact, FactExtraction, History, HistoryMessage, Summarization, Summary


class HistoryMessageInline(admin.TabularInline):
    model = HistoryMessage
    extra = 0
    fields = ("seq", "role", "content", "token_counts", "node", "run")
    readonly_fields = fields
    ordering = ("-seq",)


@admin.register(History)
class HistoryAdmin(admin.ModelAdmin):
    list_display = ("id", "workflow", "kind", "name", "key", "last_seq", "replaced_through", "updated")
    list_filter = ("kind",)
    search_fields = ("name", "key")
    inlines = [HistoryMessageInline]


@admin.register(Summary)
class SummaryAdmin(admin.ModelAdmin):
    list_display = ("id", "history", "memory_node", "covers_through", "token_count", "updated")


@admin.register(Summarization)
class SummarizationAdmin(admin.ModelAdmin):
    list_display = ("id", "history", "memory_node", "status", "model", "from_seq", "through_seq", "duration_ms", "created")
    list_filter = ("status",)


@admin.register(Fact)
class FactAdmin(admin.ModelAdmin):
    list_display = ("id", "workflow", "key", "name", "value", "source", "superseded", "created")
    list_filter = ("source",)
    search_fields = ("name", "value", "key")


@admin.register(FactExtraction)
class FactExtractionAdmin(admin.ModelAdmin):
    list_display = ("id", "workflow", "key", "memory_node", "status", "model", "added", "updated", "duration_ms", "created")
    list_filter = ("status",)
