"""A usage ingest files a forgotten person's accounting records under their pseudonym, and a netid campus gave
to someone new afterwards under that person's own netid. Accounting records as sacct gives them; no cluster."""

from datetime import timedelta

from django.utils import timezone

import slurm
from reports.ingest import usage_records_save
from reports.models import UsageRecord
from reports.pseudonyms import pseudonym
from tests.conftest import make_user


def record(job_id: str, user: str) -> slurm.AcctRecord:
    start = timezone.now() - timedelta(hours=2)
    return slurm.AcctRecord(
        job_id=job_id,
        name="train",
        user=user,
        account="cs101",
        partition="gpu",
        qos="normal",
        reservation="",
        state="COMPLETED",
        cancelled_by="",
        exit_code=0,
        signal=0,
        reason="",
        submit=start,
        start=start,
        end=start + timedelta(minutes=5),
        elapsed_seconds=300,
        gpus=1,
    )


def test_a_forgotten_persons_record_is_filed_under_their_pseudonym_and_others_are_left_alone(db):
    make_user(pseudonym("student1"), pseudonym("student1"))  # what forget_person left of student1

    usage_records_save(
        cluster="lab", records=[record("101", "student1"), record("102", "student2")], now=timezone.now()
    )

    assert dict(UsageRecord.objects.values_list("slurm_job_id", "user")) == {
        "101": pseudonym("student1"),
        "102": "student2",
    }


def test_a_netid_given_to_someone_new_is_theirs_again(db):
    make_user(pseudonym("student1"), pseudonym("student1"))
    make_user("newcomer", "student1")

    usage_records_save(cluster="lab", records=[record("103", "student1")], now=timezone.now())

    assert UsageRecord.objects.get(slurm_job_id="103").user == "student1"
