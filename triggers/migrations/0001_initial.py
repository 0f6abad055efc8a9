import django.db.models.deletion
import triggers.models
from django.db import migrations, models


class Migration(migrations.Migration):
    """Webhook and SeenSignature, moved here from the workflows app. Its table stays where it was (``db_table``): the model moves in Django's state only, nothing is copied."""

    initial = True

    dependencies = [
        ('runs', '0001_initial'),
        ('workflows', '0008_participants'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
            migrations.CreateModel(
                name='Webhook',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('node', models.CharField(max_length=100)),
                    ('token', models.CharField(default=triggers.models.new_webhook_token, max_length=64, unique=True)),
                    ('signing_secret_encrypted', models.TextField(editable=False)),
                    ('created', models.DateTimeField(auto_now_add=True)),
                    ('workflow', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='webhooks', to='workflows.workflow')),
                ],
                options={
                    'db_table': 'workflows_webhook',
                },
            ),
            migrations.CreateModel(
                name='SeenSignature',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('signature', models.CharField(max_length=100)),
                    ('expires', models.DateTimeField(db_index=True)),
                    ('run', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='runs.run')),
                    ('webhook', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='seen_signatures', to='triggers.webhook')),
                ],
                options={
                    'db_table': 'workflows_seensignature',
                },
            ),
            migrations.AddConstraint(
                model_name='webhook',
                constraint=models.UniqueConstraint(fields=('workflow', 'node'), name='one_webhook_per_node'),
            ),
            migrations.AddConstraint(
                model_name='seensignature',
                constraint=models.UniqueConstraint(fields=('webhook', 'signature'), name='one_seen_signature'),
            ),
            ],
            database_operations=[],
        ),
    ]
