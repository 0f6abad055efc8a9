"""First run: an account to log in with, the bundled local model as its provider, demo workflows.

Idempotent (``make run`` runs it every time): the account is created only when there is none; the
first account gets a ``local`` provider (and one per provider configured in the environment) if it
has none of that kind; the demos are seeded when the local provider is created, or with
``--demos`` (only the missing ones, by name). Deleting the local provider brings the demos back on
the next run.
"""

import os

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from workflows import demo
from workflows.models import Provider
from workflows.selectors import model_default
from workflows.services import provider_create, workflow_publish


class Command(BaseCommand):
    help = "Create the first account (if none exists), its local-model provider and demo workflows, and print how to log in."

    def add_arguments(self, parser):
        parser.add_argument("--username", default=os.environ.get("SKEIN_DEMO_USER", "demo"))
        parser.add_argument("--password", default=os.environ.get("SKEIN_DEMO_PASSWORD", "demo"))
        parser.add_argument("--demos", action="store_true", help="add any missing demo workflow, even if the account had its local provider")
        parser.add_argument("--no-demos", action="store_true", help="create no demo workflows")

    def handle(self, *args, username, password, demos, no_demos, **options):
        users = get_user_model()
        host = os.environ.get("HOST", "127.0.0.1")
        port = os.environ.get("PORT", "8000")
        if not users.objects.exists():
            account = users.objects.create_superuser(username=username, email="", password=password)
            self.stdout.write(self.style.SUCCESS(f"Created the first account: {username} / {password}"))
            login = f"{username} / {password}"
        else:
            account = users.objects.filter(username=username).first() or users.objects.order_by("pk").first()
            login = (
                f"{username} (password: {password}, unless you changed it)" if account.username == username
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
                    workflow_publish(workflow=workflow)  # published: webhook URLs and the widget work at once
        if seeded:
            self.stdout.write(f"Added {len(seeded)} demo workflows: " + ", ".join(w.name for w in seeded) + ".")

        default = model_default(owner=account)
        on = Provider.objects.filter(pk=default["provider"]).first()
        model = (
            "a small local model (SmolLM2-135M), no API key needed" if on is not None and on.kind == "local"
            else f"{default['model']}" + (f" on {on.name}" if on is not None else "")
        )
        self.stdout.write(
            f"\n  Open http://{host}:{port}/ and log in as {login}.\n"
            f"  New nodes and templates answer with {model}.\n"
            f"  API docs: http://{host}:{port}/api/docs/\n"
        )
