"""Write workflows as files (for Git): ``manage.py skein_export 3 > support.skein.json``."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from workflows import files
from workflows.models import Workflow


class Command(BaseCommand):
    help = "Export workflows as Skein workflow files (no secrets, no database ids): to stdout, a file or a directory."

    def add_arguments(self, parser):
        parser.add_argument("workflow_ids", nargs="+", type=int, metavar="WORKFLOW_ID")
        parser.add_argument("-o", "--output", help="a file (one workflow) or a directory (one <name>.skein.json each); default stdout")

    def handle(self, *args, workflow_ids, output, **options):
        workflows = []
        for workflow_id in workflow_ids:
            workflow = Workflow.objects.filter(pk=workflow_id).first()
            if workflow is None:
                raise CommandError(f"there is no workflow {workflow_id}")
            workflows.append(workflow)
        target = Path(output) if output else None
        if target is None and len(workflows) > 1 or target is not None and len(workflows) > 1 and not target.is_dir():
            raise CommandError("several workflows go to a directory: pass --output DIR (an existing directory)")
        for workflow in workflows:
            text = files.file_dumps(files.workflow_export(workflow=workflow))
            if target is None:
                self.stdout.write(text, ending="")
                continue
            path = target / files.file_name(workflow.name) if target.is_dir() else target
            path.write_text(text)
            self.stderr.write(f"workflow {workflow.pk} -> {path}")
