# jobs.SlurmSyncRun moves here as AssociationRun, keeping its table and rows (state only: the table
# jobs_slurmsyncrun was created by jobs 0005 and is not touched; see jobs 0006).

from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('jobs', '0006_models_move_to_clusterpolicy_and_reports'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='AssociationRun',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('started_at', models.DateTimeField(auto_now_add=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('trigger', models.CharField(help_text='command, enrollment, policy, periodic, ...', max_length=32)),
                        ('dry_run', models.BooleanField(default=False)),
                        ('courses', models.JSONField(default=list, help_text='Slurm accounts the run looked at.')),
                        ('changes', models.JSONField(default=list)),
                        ('unmanaged', models.JSONField(default=list, help_text='Associations in course accounts the portal leaves alone.')),
                        ('errors', models.JSONField(default=list)),
                    ],
                    options={
                        'db_table': 'jobs_slurmsyncrun',
                        'ordering': ['-started_at', '-pk'],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
