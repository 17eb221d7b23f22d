"""The migration that keeps starter files and data sets per version: each version made before it gets the
assignment's starter files and data sets as they were, which are what its jobs and retries were given until
then; a starter file replaced afterwards reaches only new versions."""

import hashlib

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("courses", "0005_course_ceilings_and_assignment_versions")]
AFTER = [("courses", "0006_starter_files_and_data_sets_per_version")]
TRAIN = b'print("train")\n'


def migrated(targets) -> object:
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_existing_starter_files_and_data_sets_become_part_of_every_existing_version():
    apps = migrated(BEFORE)
    try:
        course = apps.get_model("courses", "Course").objects.create(
            slug="cs101", code="CS101", title="GPU Computing", term="Fall", slurm_account="cs101"
        )
        dataset = apps.get_model("courses", "Dataset").objects.create(course=course, name="Sample", path="/data/s")
        assignment = apps.get_model("courses", "Assignment").objects.create(
            course=course, slug="train", title="Train", script_template="python3 train.py"
        )
        assignment.datasets.set([dataset])
        for number in (1, 2):
            apps.get_model("courses", "AssignmentVersion").objects.create(
                assignment=assignment, number=number, script_template="python3 train.py"
            )
        stored = default_storage.save(f"starter/{assignment.uuid}/train.py", ContentFile(TRAIN))
        apps.get_model("courses", "StarterFile").objects.create(assignment=assignment, name="train.py", file=stored)

        apps = migrated(AFTER)
        versions = apps.get_model("courses", "AssignmentVersion").objects.order_by("number")
        kept = [
            (
                v.number,
                [(f.name, f.file.name, f.sha256) for f in v.starter_files.all()],
                list(v.datasets.values_list("pk", flat=True)),
            )
            for v in versions
        ]
        files = [("train.py", stored, hashlib.sha256(TRAIN).hexdigest())]
        assert kept == [(1, files, [dataset.pk]), (2, files, [dataset.pk])]
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
