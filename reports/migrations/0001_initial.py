# jobs.UsageRecord and jobs.AccountingCursor move here, keeping their tables, indexes, constraints and
# rows (state only: jobs 0003 created the tables and they are not touched; see jobs 0006).

import django.db.models.deletion
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
                    name='AccountingCursor',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('cluster', models.CharField(max_length=64, unique=True)),
                        ('ingested_until', models.DateTimeField()),
                        ('last_success_at', models.DateTimeField(blank=True, null=True)),
                        ('last_error', models.TextField(blank=True)),
                        ('last_error_at', models.DateTimeField(blank=True, null=True)),
                    ],
                    options={
                        'db_table': 'jobs_accountingcursor',
                    },
                ),
                migrations.CreateModel(
                    name='UsageRecord',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('cluster', models.CharField(max_length=64)),
                        ('slurm_job_id', models.CharField(max_length=32)),
                        ('submitted_at', models.DateTimeField()),
                        ('job_name', models.CharField(blank=True, max_length=200)),
                        ('user', models.CharField(help_text='Cluster username.', max_length=64)),
                        ('account', models.CharField(max_length=64)),
                        ('partition', models.CharField(blank=True, max_length=64)),
                        ('qos', models.CharField(blank=True, max_length=64)),
                        ('reservation', models.CharField(blank=True, max_length=64)),
                        ('state', models.CharField(max_length=32)),
                        ('exit_code', models.IntegerField(blank=True, null=True)),
                        ('exit_signal', models.IntegerField(blank=True, null=True)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('ended_at', models.DateTimeField(blank=True, null=True)),
                        ('elapsed_seconds', models.PositiveIntegerField(default=0)),
                        ('gpus', models.PositiveIntegerField(default=0, help_text='gres/gpu in AllocTRES.')),
                        ('cpus', models.PositiveIntegerField(default=0)),
                        ('mem_mb', models.PositiveIntegerField(default=0)),
                        ('billing', models.PositiveIntegerField(default=0, help_text='Slurm billing units (TRESBillingWeights), not money.')),
                        ('ingested_at', models.DateTimeField(help_text='When an ingest first wrote this row.')),
                        ('job', models.ForeignKey(blank=True, help_text='The portal job it belongs to, found by the lq-<uuid> job name; empty for jobs made outside.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='usage_records', to='jobs.job')),
                    ],
                    options={
                        'db_table': 'jobs_usagerecord',
                        'ordering': ['submitted_at', 'slurm_job_id'],
                        'indexes': [models.Index(fields=['account', 'started_at'], name='usage_account_start'), models.Index(fields=['account', 'user'], name='usage_account_user')],
                        'constraints': [models.UniqueConstraint(fields=('cluster', 'slurm_job_id', 'submitted_at'), name='one_usage_record_per_run')],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
