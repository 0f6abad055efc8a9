import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    """Thread, Message, Run and RunStep, moved here from the workflows app. Its table stays where it was (``db_table``): the model moves in Django's state only, nothing is copied."""

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ('participants', '0001_initial'),
        ('workflows', '0008_participants'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
            migrations.CreateModel(
                name='Thread',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('title', models.CharField(blank=True, max_length=200)),
                    ('last_seq', models.PositiveIntegerField(default=0)),
                    ('widget_token', models.CharField(blank=True, editable=False, max_length=64, null=True, unique=True)),
                    ('external_id', models.CharField(blank=True, max_length=200, null=True)),
                    ('created', models.DateTimeField(auto_now_add=True)),
                    ('updated', models.DateTimeField(auto_now=True)),
                    ('owner', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='threads', to=settings.AUTH_USER_MODEL)),
                    ('participant', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='threads', to='participants.participant')),
                    ('workflow', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='threads', to='workflows.workflow')),
                ],
                options={
                    'db_table': 'workflows_thread',
                    'ordering': ['-updated', '-id'],
                },
            ),
            migrations.CreateModel(
                name='Run',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('trigger', models.CharField(choices=[('chat', 'Chat'), ('webhook', 'Webhook'), ('schedule', 'Schedule'), ('manual', 'Manual')], max_length=16)),
                    ('trigger_node', models.CharField(max_length=100)),
                    ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed')], db_index=True, default='queued', max_length=16)),
                    ('input', models.TextField(blank=True)),
                    ('payload', models.JSONField(blank=True, default=dict)),
                    ('output', models.TextField(blank=True)),
                    ('error', models.TextField(blank=True)),
                    ('warnings', models.JSONField(blank=True, default=list)),
                    ('attempts', models.PositiveIntegerField(default=0)),
                    ('idempotency_key', models.CharField(blank=True, max_length=200, null=True)),
                    ('prompt_tokens', models.PositiveIntegerField(default=0)),
                    ('completion_tokens', models.PositiveIntegerField(default=0)),
                    ('cost', models.FloatField(default=0.0)),
                    ('spender', models.CharField(blank=True, max_length=240)),
                    ('trace_context', models.CharField(blank=True, max_length=128)),
                    ('created', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('started', models.DateTimeField(blank=True, null=True)),
                    ('finished', models.DateTimeField(blank=True, null=True)),
                    ('participant', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='runs', to='participants.participant')),
                    ('version', models.ForeignKey(on_delete=django.db.models.deletion.RESTRICT, related_name='runs', to='workflows.workflowversion')),
                    ('workflow', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='runs', to='workflows.workflow')),
                    ('thread', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='runs', to='runs.thread')),
                ],
                options={
                    'db_table': 'workflows_run',
                    'ordering': ['-id'],
                },
            ),
            migrations.CreateModel(
                name='Message',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('seq', models.PositiveIntegerField()),
                    ('role', models.CharField(choices=[('user', 'User'), ('assistant', 'Assistant')], max_length=16)),
                    ('content', models.TextField()),
                    ('created', models.DateTimeField(auto_now_add=True)),
                    ('run', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='messages', to='runs.run')),
                    ('thread', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='messages', to='runs.thread')),
                ],
                options={
                    'db_table': 'workflows_message',
                    'ordering': ['thread', 'seq'],
                },
            ),
            migrations.CreateModel(
                name='RunStep',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('node', models.CharField(max_length=100)),
                    ('type', models.CharField(max_length=64)),
                    ('position', models.PositiveIntegerField()),
                    ('status', models.CharField(choices=[('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed')], default='running', max_length=16)),
                    ('input', models.TextField(blank=True)),
                    ('output', models.TextField(blank=True)),
                    ('error', models.TextField(blank=True)),
                    ('details', models.JSONField(blank=True, default=dict)),
                    ('messages', models.JSONField(blank=True, null=True)),
                    ('started', models.DateTimeField(auto_now_add=True)),
                    ('duration_ms', models.PositiveIntegerField(blank=True, null=True)),
                    ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='steps', to='runs.run')),
                ],
                options={
                    'db_table': 'workflows_runstep',
                    'ordering': ['run', 'position'],
                    'constraints': [models.UniqueConstraint(fields=('run', 'node'), name='one_step_per_node')],
                },
            ),
            migrations.AddConstraint(
                model_name='thread',
                constraint=models.UniqueConstraint(condition=models.Q(('external_id__isnull', False)), fields=('workflow', 'external_id'), name='unique_external_thread'),
            ),
            migrations.AddIndex(
                model_name='run',
                index=models.Index(fields=['thread', 'status', 'id'], name='run_thread_queue'),
            ),
            migrations.AddIndex(
                model_name='run',
                index=models.Index(fields=['workflow', 'trigger_node', 'status'], name='run_trigger_status'),
            ),
            migrations.AddIndex(
                model_name='run',
                index=models.Index(fields=['workflow', 'created'], name='run_workflow_day'),
            ),
            migrations.AddIndex(
                model_name='run',
                index=models.Index(fields=['workflow', 'spender', 'created'], name='run_spender_day'),
            ),
            migrations.AddConstraint(
                model_name='run',
                constraint=models.UniqueConstraint(condition=models.Q(('idempotency_key__isnull', False)), fields=('workflow', 'trigger_node', 'idempotency_key'), name='unique_idempotency_key_per_trigger'),
            ),
            migrations.AddConstraint(
                model_name='message',
                constraint=models.UniqueConstraint(fields=('thread', 'seq'), name='unique_message_seq'),
            ),
            migrations.AddConstraint(
                model_name='message',
                constraint=models.UniqueConstraint(condition=models.Q(('run__isnull', False)), fields=('run', 'role'), name='one_message_per_run_role'),
            ),
            ],
            database_operations=[],
        ),
    ]
