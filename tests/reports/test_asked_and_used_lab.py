"""On the lab cluster: the course report's GPU-hours asked for and used equal what `sacct` says of the same jobs.

Three jobs of different lengths and GPU counts run through the real path (form, dispatch, sync). The expected
totals are computed here from sacct's own output (AllocTRES gres/gpu x ElapsedRaw for used, x TimelimitRaw for
asked), without the adapter's parsers, and compared with the report's CSV as a TA downloads it.
"""

import csv
import io

import pytest
from django.urls import reverse

from clusterpolicy.associations import associations_reconcile
from courses.models import Assignment
from jobs.models import Job, Status
from slurm import runner
from tests.behaviour_helpers import slurm_cleanup
from tests.conftest import dispatch, submit_form, wait_for_status

pytestmark = pytest.mark.slurm

SCRIPT = 'sleep "$EPOCHS"\n'


@pytest.fixture(autouse=True)
def cancel_jobs_at_end(db):
    with slurm_cleanup():
        yield


def sacct_gpu_hours(job_ids: list[str]) -> tuple[float, float]:
    """(asked, used) GPU-hours of these jobs, from sacct's own output."""
    out = runner.run(["sacct", "-X", "-P", "-n", "-j", ",".join(job_ids), "-o", "AllocTRES,ElapsedRaw,TimelimitRaw"])
    asked = used = 0.0
    for line in out.splitlines():
        tres, elapsed, limit_minutes = line.split("|")
        gpus = dict(item.split("=", 1) for item in tres.split(",") if "=" in item).get("gres/gpu", "0")
        used += int(gpus) * int(elapsed) / 3600
        asked += int(gpus) * int(limit_minutes) * 60 / 3600
    return asked, used


def test_the_reports_gpu_hours_asked_and_used_equal_a_sacct_sum(client, student, ta, course):
    course.max_gpus_per_job = 2
    course.save(update_fields=["max_gpus_per_job"])
    # As a policy change does: Slurm's association gets the course's limits (another test's reconciliation may
    # have left cs101 at one GPU per job).
    assert associations_reconcile(course_slugs=["cs101"], trigger="policy").errors == []
    Assignment.objects.create(
        course=course,
        slug="sleepy",
        title="Sleepy",
        script_template=SCRIPT,
        parameters=[{"name": "EPOCHS", "type": "int", "default": 1, "min": 0, "max": 20}],
        gpus=1,
        minutes=5,
    )
    client.force_login(student)
    jobs = []
    for seconds, gpus, minutes in (("2", "1", "5"), ("4", "2", "7"), ("6", "1", "3")):
        form = {**submit_form(gpus=gpus, minutes=minutes), "param_EPOCHS": seconds}
        response = client.post(reverse("jobs:job-create", args=["cs101", "sleepy"]), form)
        assert response.status_code == 302, response.content.decode()[:2000]
        jobs.append(dispatch(Job.objects.filter(user=student).latest("pk")))
    for job in jobs:
        wait_for_status(job, Status.COMPLETED, timeout=120)
    asked, used = sacct_gpu_hours([job.slurm_job_id for job in jobs])
    assert used > 0 and asked == pytest.approx((1 * 5 + 2 * 7 + 1 * 3) / 60)

    client.force_login(ta)
    response = client.get(reverse("reports:course-asked-used-csv", args=["cs101"]))
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    sleepy = next(row for row in rows if row.get("Assignment") == "Sleepy")
    assert sleepy["Jobs"] == "3"
    assert float(sleepy["GPU-hours asked for"]) == pytest.approx(asked, abs=0.0005)
    assert float(sleepy["GPU-hours used"]) == pytest.approx(used, abs=0.0005)
