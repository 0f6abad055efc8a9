from django.contrib import admin

from conversation_tests.models import ConversationTest, TestResult, TestRun, TestSettings


@admin.register(ConversationTest)
class ConversationTestAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "workflow", "updated")
    search_fields = ("name",)


class TestResultInline(admin.TabularInline):
    model = TestResult
    fields = ("position", "name", "status", "thread", "error", "cost")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(TestRun)
class TestRunAdmin(admin.ModelAdmin):
    list_display = ("id", "workflow", "version_number", "purpose", "status", "passed", "failed", "errors", "created")
    list_filter = ("status", "purpose")
    inlines = [TestResultInline]


admin.site.register(TestSettings)
