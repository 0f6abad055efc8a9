from django import forms
from django.contrib import admin

from . import netguard
from .models import Message, Participant, Provider, Run, RunStep, Thread, Workflow, WorkflowVersion


class ProviderAdminForm(forms.ModelForm):
    """The key is write-only here too; a stored key follows a new server or kind only when it is
    typed again (or removed) in the same change."""

    api_key = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False),
        help_text="leave empty to keep the stored key (if the server and kind stay)",
    )
    clear_api_key = forms.BooleanField(required=False, label="Remove the stored key")
    api_base = forms.URLField(required=False, max_length=500, assume_scheme="https")

    class Meta:
        model = Provider
        fields = ("owner", "name", "kind", "api_base")

    def clean_api_base(self):
        value = self.cleaned_data.get("api_base") or ""
        problem = netguard.api_base_problem(value) if value else None
        if problem:
            raise forms.ValidationError(problem)
        return value

    def clean(self):
        cleaned = super().clean()
        provider = self.instance
        moved = provider.pk and any(name in self.changed_data for name in ("kind", "api_base"))
        if moved and provider.has_api_key and not cleaned.get("api_key") and not cleaned.get("clear_api_key"):
            self.add_error("api_key", "the server or kind changed: type the key again, or remove the stored key")
        return cleaned

    def save(self, commit=True):
        provider = super().save(commit=False)
        if self.cleaned_data.get("api_key"):
            provider.api_key = self.cleaned_data["api_key"]
        elif self.cleaned_data.get("clear_api_key"):
            provider.api_key = ""
        if commit:
            provider.save()
        return provider


@admin.register(Provider)
class ProviderAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "kind", "api_base", "owner", "has_api_key")
    form = ProviderAdminForm


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


@admin.register(Participant)
class ParticipantAdmin(admin.ModelAdmin):
    list_display = ("id", "owner", "external_id", "created", "last_seen")
    search_fields = ("external_id",)


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
