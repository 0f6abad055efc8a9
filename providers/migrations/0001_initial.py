import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    """Provider, moved here from the workflows app. Its table stays where it was (``db_table``): the model moves in Django's state only, nothing is copied."""

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ('workflows', '0008_participants'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
            migrations.CreateModel(
                name='Provider',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.CharField(max_length=100)),
                    ('kind', models.CharField(choices=[('openai', 'OpenAI'), ('anthropic', 'Anthropic'), ('ollama', 'Ollama'), ('openai_compatible', 'OpenAI-compatible'), ('local', 'Local model (bundled, offline)')], max_length=32)),
                    ('api_base', models.URLField(blank=True, max_length=500)),
                    ('api_key_encrypted', models.TextField(blank=True, editable=False)),
                    ('created', models.DateTimeField(auto_now_add=True)),
                    ('owner', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='providers', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'db_table': 'workflows_provider',
                    'ordering': ['name', 'id'],
                },
            ),
            ],
            database_operations=[],
        ),
    ]
