from django import forms
from django.contrib import admin

from core import netguard
from providers.models import Provider


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
        problem = netguard.url_problem(value) if value else None
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
