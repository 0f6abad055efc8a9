"""First run: make sure there is an account to log in with, and say how."""

import os

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create the first account (if none exists) and print how to log in."

    def add_arguments(self, parser):
        parser.add_argument("--username", default=os.environ.get("SKEIN_DEMO_USER", "demo"))
        parser.add_argument("--password", default=os.environ.get("SKEIN_DEMO_PASSWORD", "demo"))

    def handle(self, *args, username, password, **options):
        users = get_user_model()
        host = os.environ.get("HOST", "127.0.0.1")
        port = os.environ.get("PORT", "8000")
        if not users.objects.exists():
            users.objects.create_superuser(username=username, email="", password=password)
            self.stdout.write(self.style.SUCCESS(f"Created the first account: {username} / {password}"))
            login = f"{username} / {password}"
        elif users.objects.filter(username=username).exists():
            login = f"{username} (password: {password}, unless you changed it)"
        else:
            login = "the account you created earlier"
        self.stdout.write(f"\n  Open http://{host}:{port}/ and log in as {login}.\n  API docs: http://{host}:{port}/api/docs/\n")
