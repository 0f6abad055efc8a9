import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    """A test result's thread is the runs app's now (the same table): state only."""

    dependencies = [
        ('conversation_tests', '0001_initial'),
        ('runs', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
            migrations.AlterField(
                model_name='testresult',
                name='thread',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='runs.thread'),
            ),
            ],
            database_operations=[],
        ),
    ]
