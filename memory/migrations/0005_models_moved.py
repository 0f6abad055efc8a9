import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    """Runs and participants are their own apps' now (the same tables): the foreign keys follow, in state only."""

    dependencies = [
        ('memory', '0004_facts'),
        ('participants', '0001_initial'),
        ('runs', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
            migrations.AlterField(
                model_name='fact',
                name='participant',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='facts', to='participants.participant'),
            ),
            migrations.AlterField(
                model_name='fact',
                name='run',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='runs.run'),
            ),
            migrations.AlterField(
                model_name='factextraction',
                name='participant',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='participants.participant'),
            ),
            migrations.AlterField(
                model_name='factextraction',
                name='run',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='fact_extractions', to='runs.run'),
            ),
            migrations.AlterField(
                model_name='historymessage',
                name='run',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='runs.run'),
            ),
            migrations.AlterField(
                model_name='summarization',
                name='run',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='summarizations', to='runs.run'),
            ),
            ],
            database_operations=[],
        ),
    ]
