# The usage records of a report's range found by when they ended (reports.queries.usage_records_in_range).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("reports", "0001_initial"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="usagerecord",
            index=models.Index(fields=["ended_at"], name="usage_ended"),
        ),
    ]
