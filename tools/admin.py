from django.contrib import admin

from tools.models import Secret


@admin.register(Secret)
class SecretAdmin(admin.ModelAdmin):
    """Names and owners only: a secret's value is never shown, here either."""

    list_display = ("id", "name", "owner", "updated")
    fields = ("owner", "name")
    readonly_fields = ("owner", "name")

    def has_add_permission(self, request):
        return False
