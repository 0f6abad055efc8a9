from django.db import migrations


MOVED = {
    "provider": "providers",
    "participant": "participants",
    "thread": "runs",
    "message": "runs",
    "run": "runs",
    "runstep": "runs",
    "webhook": "triggers",
    "seensignature": "triggers",
}


def content_types_follow(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model, app_label in MOVED.items():
        if not ContentType.objects.filter(app_label=app_label, model=model).exists():
            ContentType.objects.filter(app_label="workflows", model=model).update(app_label=app_label)


def content_types_return(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model, app_label in MOVED.items():
        ContentType.objects.filter(app_label=app_label, model=model).update(app_label="workflows")


class Migration(migrations.Migration):
    """The models that left for their own apps leave the workflows app's state (their tables stay), and their
    content types follow them, so permissions and admin history keep pointing at them."""

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('conversation_tests', '0002_thread_moved'),
        ('memory', '0005_models_moved'),
        ('participants', '0001_initial'),
        ('providers', '0001_initial'),
        ('runs', '0001_initial'),
        ('triggers', '0001_initial'),
        ('workflows', '0008_participants'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
            migrations.RemoveField(
                model_name='participant',
                name='owner',
            ),
            migrations.RemoveField(
                model_name='thread',
                name='participant',
            ),
            migrations.RemoveField(
                model_name='run',
                name='participant',
            ),
            migrations.RemoveField(
                model_name='provider',
                name='owner',
            ),
            migrations.RemoveField(
                model_name='run',
                name='thread',
            ),
            migrations.RemoveField(
                model_name='run',
                name='version',
            ),
            migrations.RemoveField(
                model_name='run',
                name='workflow',
            ),
            migrations.RemoveField(
                model_name='runstep',
                name='run',
            ),
            migrations.RemoveField(
                model_name='seensignature',
                name='run',
            ),
            migrations.RemoveField(
                model_name='seensignature',
                name='webhook',
            ),
            migrations.RemoveField(
                model_name='thread',
                name='owner',
            ),
            migrations.RemoveField(
                model_name='thread',
                name='workflow',
            ),
            migrations.RemoveField(
                model_name='webhook',
                name='workflow',
            ),
            migrations.DeleteModel(
                name='Message',
            ),
            migrations.DeleteModel(
                name='Participant',
            ),
            migrations.DeleteModel(
                name='Provider',
            ),
            migrations.DeleteModel(
                name='RunStep',
            ),
            migrations.DeleteModel(
                name='Run',
            ),
            migrations.DeleteModel(
                name='SeenSignature',
            ),
            migrations.DeleteModel(
                name='Thread',
            ),
            migrations.DeleteModel(
                name='Webhook',
            ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_types_follow, content_types_return),
    ]
