"""The table of the reports cache (settings.CACHES["reports"]): computed course reports every process shares."""

from django.core.management import call_command
from django.db import migrations

TABLE = "labqueue_report_cache"


def create(apps, schema_editor):
    call_command("createcachetable", TABLE, database=schema_editor.connection.alias, verbosity=0)


def drop(apps, schema_editor):
    schema_editor.execute(f"DROP TABLE IF EXISTS {schema_editor.quote_name(TABLE)}")


class Migration(migrations.Migration):
    dependencies = [("reports", "0002_usage_ended")]

    operations = [migrations.RunPython(create, drop)]
