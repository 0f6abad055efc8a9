from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Accounts: logging in, the lockout, API tokens, passwords."""

    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"
