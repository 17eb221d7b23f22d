"""Each cause of a difference between the portal's jobs and Slurm's records, read on the course report page.

Rows are built directly: UsageRecord is the portal's copy of sacct (its ingest is tested elsewhere). Every
test also has jobs whose records agree, so the page must name exactly the one record that differs.
Accounts cs101/cs102 only (cs103 is the reconciliation test's on the lab cluster); no Slurm is called.
"""

from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.core.cache import caches
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from courses.models import Assignment
from jobs.models import Job, Status
from reports import reconciliation
from reports.models import AccountingCursor, UsageRecord
from tests.http_helpers import table_rows

T0 = datetime(2025, 3, 10, 9, 0, tzinfo=UTC)
REPORT = reverse("reports:course-report", args=["cs101"]) + "?first=2025-03-01&last=2025-03-31"
OUTSIDE = "Slurm job the portal did not submit"
MISSING = "Portal job Slurm has no record of"
DISAGREES = "State or usage disagrees"
#: Portal status -> a Slurm state that leads to it.
SLURM_STATE = {
    Status.COMPLETED: "COMPLETED",
    Status.FAILED: "FAILED",
    Status.CANCELLED: "CANCELLED",
    Status.RUNNING: "RUNNING",
    Status.PENDING: "PENDING",
}
_ids = iter(range(7001, 8000))


def portal_job(
    user,
    assignment: Assignment,
    *,
    status: str = Status.COMPLETED,
    gpus: int = 1,
    elapsed: int | None = 3600,
    minute: int = 0,
) -> Job:
    submitted = T0 + timedelta(minutes=minute)
    started = submitted + timedelta(minutes=1)
    finished = status not in (Status.RUNNING, Status.PENDING)
    return Job.objects.create(
        user=user,
        assignment=assignment,
        run_as=user.netid,
        gpus=gpus,
        cpus=1,
        mem_mb=500,
        minutes=120,
        account=assignment.course.slurm_account,
        script="true\n",
        workdir=f"/nonexistent/{minute}",
        status=status,
        slurm_job_id=str(next(_ids)),
        slurm_state=SLURM_STATE[status],
        submitted_at=submitted,
        started_at=started if status != Status.PENDING else None,
        ended_at=started + timedelta(seconds=elapsed or 0) if finished else None,
        elapsed_seconds=elapsed if finished else None,
        exit_code=0 if finished else None,
    )


def slurm_record(
    job: Job,
    *,
    slurm_job_id: str = "",
    account: str = "",
    state: str = "",
    gpus: int | None = None,
    elapsed: int | None = None,
) -> UsageRecord:
    """Slurm's copy of `job` as sacct would report it; any argument given changes that field."""
    elapsed = job.elapsed_seconds or 0 if elapsed is None else elapsed
    state = state or job.slurm_state
    live = state in ("RUNNING", "PENDING")
    return UsageRecord.objects.create(
        cluster=settings.LABQUEUE_SLURM_CLUSTER,
        slurm_job_id=slurm_job_id or job.slurm_job_id,
        submitted_at=job.submitted_at,
        job=job,
        job_name=job.slurm_name,
        user=job.run_as,
        account=account or job.account,
        partition="gpu",
        state=state,
        exit_code=None if live else 0,
        started_at=job.started_at,
        ended_at=None if live else job.started_at + timedelta(seconds=elapsed),
        elapsed_seconds=elapsed,
        gpus=job.gpus if gpus is None else gpus,
        cpus=1,
        mem_mb=500,
        billing=1,
        ingested_at=T0 + timedelta(days=20),
    )


@pytest.fixture
def agreeing(course, assignment, student, classmate):
    """Jobs whose Slurm records agree, one per way a Slurm state maps to a portal status; never listed."""
    AccountingCursor.objects.create(cluster=settings.LABQUEUE_SLURM_CLUSTER, ingested_until=T0 + timedelta(days=20))
    jobs = [
        portal_job(student, assignment, status=Status.COMPLETED, minute=1),
        portal_job(classmate, assignment, status=Status.FAILED, minute=2),
        portal_job(classmate, assignment, status=Status.CANCELLED, gpus=0, minute=3),
        portal_job(student, assignment, status=Status.RUNNING, minute=4),
    ]
    for job in jobs:
        slurm_record(job)
    timeout = portal_job(student, assignment, status=Status.FAILED, minute=5)
    slurm_record(timeout, state="TIMEOUT")
    return jobs + [timeout]


def differences(client, instructor) -> list[list[str]]:
    client.force_login(instructor)
    response = client.get(REPORT)
    assert response.status_code == 200
    assert response.context["report"].reconciliation.ingested_until is not None
    assert "differences of each kind are listed" not in response.content.decode(), "a few: all of them listed"
    return table_rows(response.content.decode(), "reconciliation-differences")


def short(job: Job) -> str:
    return str(job.uuid)[:8]


def test_a_record_on_the_course_account_from_another_courses_portal_job_is_listed_with_that_course(
    client, instructor, agreeing, outsider, other_course
):
    foreign = Assignment.objects.create(course=other_course, slug="hello", title="Elsewhere", script_template="true")
    job = portal_job(outsider, foreign, minute=10)
    slurm_record(job, account="cs101")  # ran on cs101's account
    assert differences(client, instructor) == [
        [OUTSIDE, job.slurm_job_id, "student3", "", "Submitted through the portal for another course, CS102 (Fall)."]
    ]


def test_listed_records_cost_no_query_each(client, instructor, student, assignment, agreeing, outsider, other_course):
    foreign = Assignment.objects.create(course=other_course, slug="hello", title="Elsewhere", script_template="true")
    client.force_login(instructor)

    def queries_with(records: int) -> int:
        for _ in range(records):
            slurm_record(portal_job(outsider, foreign, minute=10), account="cs101")
            slurm_record(portal_job(student, assignment, gpus=1, minute=10), gpus=2)  # disagrees
        caches["reports"].clear()  # each time the report is computed, as on its first view
        with CaptureQueriesContext(connection) as queries:
            assert client.get(REPORT).status_code == 200
        return len(queries)

    assert queries_with(1) == queries_with(3)


def test_before_accounting_is_first_copied_the_page_says_there_is_nothing_to_compare(
    client, instructor, student, assignment
):
    portal_job(student, assignment, minute=10)  # no record: it would be missing, were there a copy
    client.force_login(instructor)

    page = client.get(REPORT).content.decode()

    assert "Slurm's accounting has not been copied into the portal yet, so there is nothing to compare." in page
    assert 'id="reconciliation-totals"' not in page and 'id="reconciliation-differences"' not in page


def test_another_courses_portal_jobs_are_neither_counted_nor_listed(
    client, instructor, agreeing, outsider, other_course
):
    foreign = Assignment.objects.create(course=other_course, slug="hello", title="Elsewhere", script_template="true")
    portal_job(outsider, foreign, minute=10)  # on cs102, with no record

    client.force_login(instructor)
    page = client.get(REPORT).content.decode()
    jobs = {row[0]: row[1] for row in table_rows(page, "reconciliation-totals") if row}
    assert jobs["The portal's jobs"] == str(len(agreeing))
    assert 'id="reconciliation-agrees"' in page


def test_a_portal_job_slurm_has_no_record_of_is_listed_as_missing(client, instructor, student, assignment, agreeing):
    job = portal_job(student, assignment, minute=10)
    assert differences(client, instructor) == [
        [
            MISSING,
            job.slurm_job_id,
            "student1",
            short(job),
            f"The portal sent it to Slurm as job {job.slurm_job_id}, but Slurm's accounting has no record of it.",
        ]
    ]


def test_a_second_slurm_job_with_the_portal_jobs_name_is_listed(client, instructor, student, assignment, agreeing):
    job = portal_job(student, assignment, minute=10)
    slurm_record(job)
    slurm_record(job, slurm_job_id="7999")  # e.g. sbatch ran twice for one portal job
    assert differences(client, instructor) == [
        [
            DISAGREES,
            "7999",
            "student1",
            short(job),
            f"A second Slurm job carries this portal job's name; the portal tracks job {job.slurm_job_id}.",
        ]
    ]


def test_a_record_charged_to_another_account_is_listed(client, instructor, student, assignment, agreeing):
    job = portal_job(student, assignment, minute=10)
    slurm_record(job, account="cs102")
    assert differences(client, instructor) == [
        [
            DISAGREES,
            job.slurm_job_id,
            "student1",
            short(job),
            "Slurm charged account cs102; the portal asked for cs101.",
        ]
    ]


def test_a_record_with_other_gpus_than_the_portal_asked_for_is_listed(
    client, instructor, classmate, assignment, agreeing
):
    job = portal_job(classmate, assignment, gpus=1, minute=10)
    slurm_record(job, gpus=2)
    assert differences(client, instructor) == [
        [
            DISAGREES,
            job.slurm_job_id,
            "student2",
            short(job),
            "Slurm allocated 2 GPU(s); the portal asked for 1.",
        ]
    ]


def test_a_record_still_live_in_slurms_copy_for_a_finished_portal_job_is_listed(
    client, instructor, student, assignment, agreeing
):
    job = portal_job(student, assignment, status=Status.COMPLETED, minute=10)
    slurm_record(job, state="RUNNING")
    assert differences(client, instructor) == [
        [
            DISAGREES,
            job.slurm_job_id,
            "student1",
            short(job),
            "Slurm's copy still says RUNNING; the portal says completed.",
        ]
    ]


def test_a_record_whose_final_state_differs_from_the_portal_status_is_listed(
    client, instructor, student, assignment, agreeing
):
    job = portal_job(student, assignment, status=Status.COMPLETED, minute=10)
    slurm_record(job, state="OUT_OF_MEMORY")
    assert differences(client, instructor) == [
        [
            DISAGREES,
            job.slurm_job_id,
            "student1",
            short(job),
            "Slurm says OUT_OF_MEMORY; the portal says completed.",
        ]
    ]


def test_a_record_whose_run_time_differs_from_the_portal_is_listed(client, instructor, student, assignment, agreeing):
    job = portal_job(student, assignment, elapsed=3500, minute=10)
    slurm_record(job, elapsed=3600)
    assert differences(client, instructor) == [
        [
            DISAGREES,
            job.slurm_job_id,
            "student1",
            short(job),
            "Slurm says it ran 3600 s; the portal says 3500 s.",
        ]
    ]


def totals(page: str) -> dict[str, list[str]]:
    """The reconciliation's totals: each side's jobs and GPU-hours, by the side's name."""
    return {row[0].split(" on ")[0]: row[1:] for row in table_rows(page, "reconciliation-totals") if row}


def test_agreeing_jobs_alone_show_no_difference(client, instructor, agreeing):
    client.force_login(instructor)
    page = client.get(REPORT).content.decode()
    assert table_rows(page, "reconciliation-differences") == []
    sides = totals(page)
    assert sides["The portal's jobs"] == sides["Slurm's records (sacct)"] and sides["The portal's jobs"][0] == "5"
    assert 'id="reconciliation-agrees"' in page, "a job still running counts on both sides, up to the range's end"


def test_a_course_without_jobs_agrees_at_zero(client, instructor, course):
    AccountingCursor.objects.create(cluster=settings.LABQUEUE_SLURM_CLUSTER, ingested_until=T0 + timedelta(days=20))
    client.force_login(instructor)
    page = client.get(REPORT).content.decode()
    assert totals(page) == {"The portal's jobs": ["0", "0.000"], "Slurm's records (sacct)": ["0", "0.000"]}
    assert "Nothing differs: the portal and Slurm both count 0 jobs and 0.000 GPU-hours." in page


def test_a_portal_job_submitted_after_the_last_copy_of_accounting_is_not_compared_yet(
    client, instructor, student, assignment, agreeing
):
    portal_job(student, assignment, minute=20 * 24 * 60 + 60)  # an hour after the copy, inside the range
    client.force_login(instructor)
    page = client.get(REPORT).content.decode()
    assert table_rows(page, "reconciliation-differences") == []
    assert totals(page)["The portal's jobs"][0] == "5"


def test_a_portal_job_whose_tracked_slurm_job_has_no_record_is_missing_even_if_another_carries_its_name(
    client, instructor, student, assignment, agreeing
):
    job = portal_job(student, assignment, minute=10)
    slurm_record(job, slurm_job_id="7998")  # only a Slurm job the portal does not track has its name
    missing = f"The portal sent it to Slurm as job {job.slurm_job_id}, but Slurm's accounting has no record of it."
    second = f"A second Slurm job carries this portal job's name; the portal tracks job {job.slurm_job_id}."
    assert differences(client, instructor) == [
        [MISSING, job.slurm_job_id, "student1", short(job), missing],
        [DISAGREES, "7998", "student1", short(job), second],
    ]


def test_a_record_of_a_job_the_portal_never_got_an_id_for_says_it_tracks_none(
    client, instructor, student, assignment, agreeing
):
    job = portal_job(student, assignment, minute=10)
    slurm_record(job, slurm_job_id="7998")  # sbatch's answer was lost: Slurm has the job, the portal no id
    Job.objects.filter(pk=job.pk).update(slurm_job_id="")
    assert differences(client, instructor) == [
        [
            DISAGREES,
            "7998",
            "student1",
            short(job),
            "A second Slurm job carries this portal job's name; the portal tracks job none.",
        ]
    ]


def test_a_running_job_whose_record_differs_otherwise_names_that_cause_only_not_its_state(
    client, instructor, student, assignment, agreeing
):
    job = portal_job(student, assignment, status=Status.RUNNING, gpus=1, minute=10)
    slurm_record(job, gpus=2)
    assert [row[-1] for row in differences(client, instructor)] == ["Slurm allocated 2 GPU(s); the portal asked for 1."]


def test_a_record_that_differs_in_two_ways_names_both_causes_one_after_the_other(
    client, instructor, student, assignment, agreeing
):
    job = portal_job(student, assignment, gpus=1, minute=10)
    slurm_record(job, account="cs102", gpus=2)
    assert [row[-1] for row in differences(client, instructor)] == [
        "Slurm charged account cs102; the portal asked for cs101. Slurm allocated 2 GPU(s); the portal asked for 1."
    ]


def outside_record(slurm_job_id: str, minute: int) -> UsageRecord:
    """A job someone ran with sbatch on the course account, around the portal."""
    submitted = T0 + timedelta(minutes=minute)
    return UsageRecord.objects.create(
        cluster=settings.LABQUEUE_SLURM_CLUSTER,
        slurm_job_id=slurm_job_id,
        submitted_at=submitted,
        job_name="train.sh",
        user="student1",
        account="cs101",
        partition="gpu",
        state="COMPLETED",
        exit_code=0,
        started_at=submitted,
        ended_at=submitted + timedelta(minutes=5),
        elapsed_seconds=300,
        gpus=1,
        cpus=1,
        mem_mb=500,
        billing=1,
        ingested_at=T0 + timedelta(days=20),
    )


def test_jobs_run_around_the_portal_are_listed_by_submission_time_then_by_id(client, instructor, agreeing):
    outside_record("9002", minute=1)
    outside_record("9003", minute=2)  # written before 9001, submitted at the same minute
    outside_record("9001", minute=2)

    assert [row[1] for row in differences(client, instructor) if row[0] == OUTSIDE] == ["9002", "9001", "9003"]


def test_a_job_run_around_the_portal_is_listed_with_its_job_name(client, instructor, agreeing):
    outside_record("9001", minute=1)

    assert differences(client, instructor) == [
        [
            OUTSIDE,
            "9001",
            "student1",
            "",
            "On the course account but not submitted through the portal (job name “train.sh”).",
        ]
    ]


def test_disagreeing_records_are_listed_by_submission_time_not_by_job_id(
    client, instructor, student, assignment, agreeing
):
    later = portal_job(student, assignment, gpus=1, minute=20)  # the lower job id, submitted later
    earlier = portal_job(student, assignment, gpus=1, minute=10)
    slurm_record(later, gpus=2)
    slurm_record(earlier, gpus=2)

    assert [row[1] for row in differences(client, instructor)] == [earlier.slurm_job_id, later.slurm_job_id]


def test_disagreeing_records_submitted_at_once_are_listed_by_job_id(client, instructor, student, assignment, agreeing):
    jobs = [portal_job(student, assignment, gpus=1, minute=10) for _ in range(3)]
    for job, slurm_job_id in zip(jobs, ["7993", "7991", "7992"], strict=True):  # ids in another order than the rows
        Job.objects.filter(pk=job.pk).update(slurm_job_id=slurm_job_id)
        job.slurm_job_id = slurm_job_id
        slurm_record(job, gpus=2)

    assert [row[1] for row in differences(client, instructor)] == ["7991", "7992", "7993"]


def test_a_portal_job_whose_slurm_id_an_earlier_job_had_is_missing_when_only_that_job_has_a_record(
    client, instructor, student, assignment, agreeing
):
    earlier = portal_job(student, assignment, minute=10)
    slurm_record(earlier)
    later = portal_job(student, assignment, minute=20)  # Slurm's job ids started again (a controller rebuilt)
    Job.objects.filter(pk=later.pk).update(slurm_job_id=earlier.slurm_job_id)

    assert differences(client, instructor) == [
        [
            MISSING,
            earlier.slurm_job_id,
            "student1",
            short(later),
            f"The portal sent it to Slurm as job {earlier.slurm_job_id}, but Slurm's accounting has no record of it.",
        ]
    ]


@pytest.mark.parametrize(("records", "notice"), [(2, False), (3, True)])
def test_the_only_the_first_notice_appears_once_a_kind_has_more_differences_than_are_listed(
    client, instructor, agreeing, monkeypatch, records, notice
):
    monkeypatch.setattr(reconciliation, "DIFFERENCES_SHOWN", 2)
    for number in range(records):
        outside_record(str(9001 + number), minute=number)
    client.force_login(instructor)

    page = client.get(REPORT).content.decode()

    assert ("differences of each kind are listed" in page) is notice
    assert [row[1] for row in table_rows(page, "reconciliation-differences")] == ["9001", "9002"]


def test_the_totals_give_each_side_s_gpu_hours_to_the_thousandth(client, instructor, student, assignment):
    AccountingCursor.objects.create(cluster=settings.LABQUEUE_SLURM_CLUSTER, ingested_until=T0 + timedelta(days=20))
    slurm_record(portal_job(student, assignment, gpus=1, elapsed=36_000), gpus=2)  # ten hours, a GPU more in Slurm

    client.force_login(instructor)
    totals = table_rows(client.get(REPORT).content.decode(), "reconciliation-totals")

    assert [row[1:] for row in totals] == [["1", "10.000"], ["1", "20.000"]]
