# The restructure moves three models out of jobs without touching their tables:
# SlurmSyncRun -> clusterpolicy.AssociationRun, UsageRecord and AccountingCursor -> reports.
# Here they leave the jobs state only; clusterpolicy 0001 and reports 0001 take them over with
# db_table set to the same tables (jobs_slurmsyncrun, jobs_usagerecord, jobs_accountingcursor).

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('jobs', '0005_job_reservation_and_slurm_sync_runs'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name='SlurmSyncRun'),
                migrations.DeleteModel(name='UsageRecord'),
                migrations.DeleteModel(name='AccountingCursor'),
            ],
            database_operations=[],
        ),
    ]
