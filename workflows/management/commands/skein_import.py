"""Read workflow files (kept in Git) into Skein: ``manage.py skein_import support.skein.json --user demo``."""

import sys
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from workflows import analysis, files, services
from workflows.models import Workflow


class Command(BaseCommand):
    help = (
        "Import a Skein workflow file as a new workflow of a user, or (--into ID) as the new draft of that "
        "user's workflow; --publish publishes it. Providers are matched by name and kind; what is not "
        "matched is reported. Exits non-zero, creating nothing, for a file it cannot read."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="a .skein.json file, or - for stdin")
        parser.add_argument("--user", required=True, help="the owner (username)")
        parser.add_argument("--into", type=int, metavar="WORKFLOW_ID", help="replace this workflow's draft (a new revision) instead")
        parser.add_argument("--name", help="a name instead of the file's")
        parser.add_argument("--publish", action="store_true", help="publish the imported draft (it must be valid)")

    def handle(self, *args, path, user, into, name, publish, **options):
        owner = get_user_model().objects.filter(username=user).first()
        if owner is None:
            raise CommandError(f"there is no user '{user}'")
        target = None
        if into is not None:
            target = Workflow.objects.filter(pk=into, owner=owner).first()
            if target is None:
                raise CommandError(f"{user} has no workflow {into}")
        try:
            raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc}") from None
        try:
            data = files.file_parse(raw)
        except files.FileRefused as exc:
            raise CommandError(f"{path}: {exc.message}") from None
        workflow, unmapped = files.workflow_import(owner=owner, data=data, name=name, into=target)
        for issue in unmapped:
            self.stderr.write(self.style.WARNING(f"node {issue['node']}: {issue['message']}"))
        verb = "updated the draft of" if target else "created"
        self.stdout.write(self.style.SUCCESS(f"{verb} workflow {workflow.pk} ({workflow.name}), revision {workflow.revision}"))
        if publish:
            try:
                version = services.workflow_publish(workflow=workflow, by=owner)
            except analysis.InvalidWorkflow as exc:
                problems = "; ".join(f"{i['node'] or '-'}: {i['message']}" for i in exc.issues)
                raise CommandError(f"not published, the workflow has errors: {problems}") from None
            self.stdout.write(self.style.SUCCESS(f"published version {version.number}"))
