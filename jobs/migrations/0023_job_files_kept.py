# The retention purge's index: the jobs whose files are kept, by when they finished (jobs.retention).

import django.db.models.functions.comparison
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0022_job_ran_on"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                django.db.models.functions.comparison.Coalesce("ended_at", "updated_at"),
                models.F("id"),
                condition=models.Q(("files_purged_at__isnull", True)),
                name="job_files_kept",
            ),
        ),
    ]
