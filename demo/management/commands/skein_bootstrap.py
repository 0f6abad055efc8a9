"""First run: an account to log in with, the bundled local model as its provider, demo workflows.

Idempotent (``make run`` runs it every time): the account is created only when there is none; the
first account gets a ``local`` provider (and one per provider configured in the environment) if it
has none of that kind; the demos are seeded when the local provider is created, or with
``--demos`` (only the missing ones, by name). Deleting the local provider brings the demos back on
the next run.

The account: in the embedded mode (a machine of one's own) an ordinary account ``demo`` / ``demo``,
never a superuser. In the full mode (a server) never ``demo`` / ``demo``: an administrator named
``SKEIN_ADMIN_USER`` (default ``admin``) whose password is ``SKEIN_ADMIN_PASSWORD`` or, without
it, a random one printed once. A ``demo`` / ``demo`` account left by an earlier version loses its
administrator rights (embedded) or gets a random password (full mode).
"""

import os
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from core.backends import backend
from demo import seed as demo
from providers.catalog import model_default
from providers.models import Provider
from providers.services import provider_create
from workflows.services import workflow_publish


class Command(BaseCommand):
    help = "Create the first account (if none exists), its local-model provider and demo workflows, and print how to log in."

    def add_arguments(self, parser):
        full = backend().name == "full"
        parser.add_argument("--username", default=settings.SKEIN_ADMIN_USER if full else settings.SKEIN_DEMO_USER)
        parser.add_argument(
            "--password",
            default=settings.SKEIN_ADMIN_PASSWORD if full else (settings.SKEIN_DEMO_PASSWORD or "demo"),
            help="full mode: default SKEIN_ADMIN_PASSWORD, else a random password (printed)",
        )
        parser.add_argument(
            "--demos", action="store_true", help="add any missing demo workflow, even if the account had its local provider"
        )
        parser.add_argument("--no-demos", action="store_true", help="create no demo workflows")

    def handle(self, *args, username, password, demos, no_demos, **options):
        users = get_user_model()
        host = os.environ.get("HOST", "127.0.0.1")
        port = os.environ.get("PORT", "8000")
        self._retire_demo_superuser(users)
        if not users.objects.exists():
            account = self._first_account(users, username, password)
            login = f"{username} / {password}" if not backend().name == "full" else f"{username} (the password printed above)"
        else:
            account = users.objects.filter(username=username).first() or users.objects.order_by("pk").first()
            login = (
                f"{username} (password: {password}, unless you changed it)"
                if account.username == username and not backend().name == "full"
                else "the account you created earlier"
            )

        with transaction.atomic():
            provider, created = demo.local_provider_get_or_create(owner=account)
            if created:
                self.stdout.write(f"Added the provider '{provider.name}' (runs offline, no key needed) to {account.username}.")
            for spec in settings.SKEIN_ENV_PROVIDERS:
                if not Provider.objects.filter(owner=account, kind=spec["kind"]).exists():
                    provider_create(owner=account, **spec)
                    self.stdout.write(f"Added the provider '{spec['name']}' to {account.username}.")
            seeded = []
            if (created or demos) and not no_demos:
                seeded = demo.demo_seed(owner=account)
                for workflow in seeded:
                    if workflow.published_version is None:  # the order lookup is, for the desk that calls it
                        workflow_publish(workflow=workflow)  # published: webhook URLs and the widget work at once
        if seeded:
            self.stdout.write(f"Added {len(seeded)} demo workflows: " + ", ".join(w.name for w in seeded) + ".")

        default = model_default(owner=account)
        on = Provider.objects.filter(pk=default["provider"]).first()
        model = (
            "a small local model (SmolLM2-135M), no API key needed"
            if on is not None and on.kind == "local"
            else f"{default['model']}" + (f" on {on.name}" if on is not None else "")
        )
        self.stdout.write(
            f"\n  Open http://{host}:{port}/ and log in as {login}.\n"
            f"  New nodes and templates answer with {model}.\n"
            f"  API docs: http://{host}:{port}/api/docs/\n"
        )

    def _first_account(self, users, username: str, password: str):
        if not backend().name == "full":
            account = users.objects.create_user(username=username, email="", password=password)
            self.stdout.write(self.style.SUCCESS(f"Created the first account: {username} / {password}"))
            return account
        generated = not password
        password = password or secrets.token_urlsafe(18)
        try:
            validate_password(password, users(username=username))
        except ValidationError as exc:
            raise CommandError("SKEIN_ADMIN_PASSWORD is too weak: " + " ".join(exc.messages)) from None
        account = users.objects.create_superuser(username=username, email="", password=password)
        shown = f"{username} / {password}" if generated else f"{username} (password from SKEIN_ADMIN_PASSWORD)"
        self.stdout.write(self.style.SUCCESS(f"Created the administrator account: {shown}"))
        if generated:
            self.stdout.write("  This password is shown once: keep it, or change it on the Account page after logging in.")
        return account

    def _retire_demo_superuser(self, users) -> None:
        """An earlier version made ``demo`` / ``demo`` a superuser, also on servers."""
        demo_account = users.objects.filter(username="demo").first()
        if demo_account is None or not demo_account.check_password("demo"):
            return
        if backend().name == "full":
            password = secrets.token_urlsafe(18)
            demo_account.set_password(password)
            demo_account.is_superuser = demo_account.is_staff = False
            demo_account.save()
            self.stdout.write(self.style.WARNING(f"The account demo had the password 'demo'; its new password is {password}"))
        elif demo_account.is_superuser or demo_account.is_staff:
            demo_account.is_superuser = demo_account.is_staff = False
            demo_account.save(update_fields=["is_superuser", "is_staff"])
            self.stdout.write(self.style.WARNING("The account demo / demo is no longer an administrator."))
