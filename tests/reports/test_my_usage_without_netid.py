"""A course member without a cluster username sees no usage on "My usage": nobody's, not everybody's."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from courses.models import Role
from reports.models import UsageRecord
from tests.conftest import make_user
from tests.http_helpers import table_rows

START = datetime(2025, 3, 10, 9, 0, tzinfo=UTC)
MY_USAGE = reverse("reports:my-usage", args=["cs101"]) + "?first=2025-03-01&last=2025-03-31"


def record(user: str, job_id: str, gpus: int, hours: int) -> UsageRecord:
    return UsageRecord.objects.create(
        cluster="lab",
        slurm_job_id=job_id,
        submitted_at=START,
        user=user,
        account="cs101",
        state="COMPLETED",
        started_at=START,
        ended_at=START + timedelta(hours=hours),
        elapsed_seconds=hours * 3600,
        gpus=gpus,
        cpus=2,
        billing=4,
        ingested_at=START,
    )


@pytest.fixture
def usage(student, classmate):
    record("student1", "101", gpus=2, hours=3)
    record("student2", "102", gpus=1, hours=5)
    record("researcher1", "103", gpus=4, hours=1)  # someone outside the course on its account


def total_row(client, person) -> tuple[dict[str, str], str]:
    client.force_login(person)
    response = client.get(MY_USAGE)
    assert response.status_code == 200
    header = list(response.context["header"])
    rows = table_rows(response.content.decode(), "usage-total")
    assert len(rows) == 1
    return dict(zip(header, rows[0], strict=True)), response.content.decode()


@pytest.mark.parametrize("role", [Role.STUDENT, Role.TA, Role.INSTRUCTOR])
def test_a_member_without_a_netid_sees_nobodys_usage(client, course, usage, role):
    member = make_user("researcher1", None)  # a username that is someone's cluster name: still not theirs
    course.enrollments.create(user=member, role=role)
    total, page = total_row(client, member)
    assert [total[name] for name in ("Jobs", "GPU-hours", "CPU-hours", "Usage units")] == [
        "0",
        "0.000",
        "0.000",
        "0.000",
    ]
    assert table_rows(page, "usage-assignments") == [["No usage in this range."]]
    main = page.split("<main>")[1]
    for trace in ("student1", "student2", "researcher1", "6.000", "5.000", "4.000"):
        assert trace not in main


def test_the_same_page_shows_a_student_with_a_netid_only_their_own_usage(client, student, usage):
    total, page = total_row(client, student)
    assert (total["Jobs"], total["GPU-hours"]) == ("1", "6.000"), "2 GPUs x 3 hours: the records are in range"
    assert table_rows(page, "usage-assignments")[0][2] == "1"
    main = page.split("<main>")[1]
    assert "student2" not in main and "researcher1" not in main and "5.000" not in main
