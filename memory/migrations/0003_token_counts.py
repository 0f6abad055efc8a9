from django.db import migrations, models


def counts_by_tokenizer(apps, schema_editor):
    """Counts stored before were cl100k's: keep them under that tokenizer's name."""
    HistoryMessage = apps.get_model("memory", "HistoryMessage")
    batch = []
    for message in HistoryMessage.objects.only("id", "token_count").iterator(chunk_size=2000):
        message.token_counts = {"cl100k": message.token_count}
        batch.append(message)
        if len(batch) >= 2000:
            HistoryMessage.objects.bulk_update(batch, ["token_counts"])
            batch = []
    if batch:
        HistoryMessage.objects.bulk_update(batch, ["token_counts"])


class Migration(migrations.Migration):
    dependencies = [("memory", "0002_step_messages")]

    operations = [
        migrations.AddField(model_name="historymessage", name="token_counts", field=models.JSONField(default=dict)),
        migrations.RunPython(counts_by_tokenizer, migrations.RunPython.noop),
        migrations.RemoveField(model_name="historymessage", name="token_count"),
    ]
