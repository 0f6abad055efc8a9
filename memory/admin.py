from django.contrib import admin

from .models import History, HistoryMessage, Summarization, Summary


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
