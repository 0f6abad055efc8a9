import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    """Participant, moved here from the workflows app. Its table stays where it was (``db_table``): the model moves in Django's state only, nothing is copied."""

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ('workflows', '0008_participants'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
            migrations.CreateModel(
                name='Participant',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('external_id', models.CharField(max_length=200)),
                    ('created', models.DateTimeField(auto_now_add=True)),
                    ('last_seen', models.DateTimeField(auto_now=True)),
                    ('owner', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='participants', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'db_table': 'workflows_participant',
                    'ordering': ['-last_seen', '-id'],
                    'constraints': [models.UniqueConstraint(fields=('owner', 'external_id'), name='unique_participant_per_owner')],
                },
            ),
            ],
            database_operations=[],
        ),
    ]
