"""The job lists show every job, a page at a time with counts; the TAs' lists search by student and
assignment and export every matching job as formula-safe CSV; explanations read as their titles."""

import csv
import io

import pytest
from django.urls import reverse

from courses.models import Assignment, Role
from jobs.list_views import LIST_PAGE_SIZE
from jobs.models import Job, Status
from tests.conftest import job_row, make_user

pytestmark = pytest.mark.django_db

FORMULA_TITLE = '=HYPERLINK("http://attacker.example/","Open")'


def many_jobs(user, assignment, count: int, **fields) -> None:
    """`count` job rows at once (as job_row makes them)."""
    template = job_row(user, assignment, **fields)
    template.delete()
    values = {
        f.attname: getattr(template, f.attname) for f in Job._meta.concrete_fields if f.attname not in ("id", "uuid")
    }
    Job.objects.bulk_create([Job(**values) for _ in range(count)])


def text_of(response) -> str:
    assert response.status_code == 200
    return response.content.decode()


def csv_rows(response) -> list[dict]:
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="cs101-')
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


@pytest.fixture
def other_assignment(course) -> Assignment:
    return Assignment.objects.create(course=course, slug="other", title=FORMULA_TITLE, script_template="true\n")


@pytest.fixture
def alice(course):
    user = make_user("alice", "al42")
    user.first_name, user.last_name = "Alice", "Liddell"
    user.save(update_fields=["first_name", "last_name"])
    course.enrollments.create(user=user, role=Role.STUDENT)
    return user


def test_my_jobs_shows_every_job_a_page_at_a_time_with_counts(client, student, assignment):
    many_jobs(student, assignment, 2 * LIST_PAGE_SIZE + 20, status=Status.COMPLETED)
    client.force_login(student)

    first = text_of(client.get("/jobs/"))
    last = text_of(client.get("/jobs/?page=3"))

    assert "Jobs 1–50 of 120 (page 1 of 3)" in first
    assert first.count("Hello GPU · attempt 1") == LIST_PAGE_SIZE
    assert 'href="?page=2" rel="next"' in first
    assert "Jobs 101–120 of 120 (page 3 of 3)" in last
    assert last.count("Hello GPU · attempt 1") == 20
    assert "Jobs 101–120 of 120" in text_of(client.get("/jobs/?page=99"))  # past the end: the last page
    assert "Jobs 1–50 of 120" in text_of(client.get("/jobs/?page=x"))


def test_the_course_job_list_is_not_cut_at_500(client, ta, student, assignment):
    many_jobs(student, assignment, 520, status=Status.COMPLETED)
    client.force_login(ta)

    last = text_of(client.get("/jobs/course/cs101/?page=11"))

    assert "Jobs 501–520 of 520 (page 11 of 11)" in last
    assert len(csv_rows(client.get("/jobs/course/cs101/jobs.csv"))) == 520


def test_the_course_job_list_pages_keep_the_filters(client, ta, student, assignment):
    many_jobs(student, assignment, LIST_PAGE_SIZE + 1, status=Status.FAILED)
    client.force_login(ta)

    page = text_of(client.get("/jobs/course/cs101/?status=failed&student=stud"))

    assert 'href="?status=failed&amp;student=stud&amp;page=2" rel="next"' in page


def test_ta_lists_search_by_student_name_username_or_netid_and_by_assignment(
    client, ta, student, alice, assignment, other_assignment
):
    job_row(student, assignment, status=Status.FAILED)
    job_row(alice, assignment, status=Status.FAILED)
    job_row(alice, other_assignment, status=Status.FAILED)
    client.force_login(ta)

    for url in ("/jobs/course/cs101/", "/jobs/course/cs101/failed/"):
        for search, count in [("liddell", 2), ("ALI", 2), ("al42", 2), ("student1", 1), ("nobody", 0)]:
            assert client.get(url, {"student": search}).context["jobs"].paginator.count == count, (url, search)
        assert client.get(url, {"assignment": "other"}).context["jobs"].paginator.count == 1
        assert client.get(url, {"assignment": "hello", "student": "alice"}).context["jobs"].paginator.count == 1


def test_the_course_jobs_csv_has_every_matching_job_formula_safe(client, ta, alice, assignment, other_assignment):
    job_row(alice, assignment, status=Status.COMPLETED, slurm_job_id="77", elapsed_seconds=754)
    job_row(alice, other_assignment, status=Status.FAILED, explanation_key="cuda-out-of-memory", attempt=2)
    client.force_login(ta)

    rows = csv_rows(client.get(reverse("jobs:course-jobs-csv", args=["cs101"]), {"student": "alice"}))

    assert [row["job"] for row in rows] == ["'" + FORMULA_TITLE + " · attempt 2", "Hello GPU · attempt 1"]
    assert rows[0]["assignment"] == "'" + FORMULA_TITLE
    assert rows[0]["explanation"] == "The GPU ran out of memory"
    assert rows[0]["explanation key"] == "cuda-out-of-memory"
    assert rows[1] | {"submitted": ""} == rows[1] | {
        "student": "alice",
        "cluster username": "al42",
        "status": "Completed",
        "slurm job id": "77",
        "elapsed seconds": "754",
        "submitted": "",
    }
    only_failed = csv_rows(client.get(reverse("jobs:course-jobs-csv", args=["cs101"]), {"status": "failed"}))
    assert [row["status"] for row in only_failed] == ["Failed"]


def test_the_failures_csv_follows_the_filters(client, ta, student, alice, assignment):
    job_row(student, assignment, status=Status.FAILED, explanation_key="timeout")
    job_row(alice, assignment, status=Status.FAILED, explanation_key="cuda-out-of-memory")
    job_row(alice, assignment, status=Status.COMPLETED)
    client.force_login(ta)

    everything = csv_rows(client.get(reverse("jobs:course-failures-csv", args=["cs101"])))
    oom = csv_rows(
        client.get(reverse("jobs:course-failures-csv", args=["cs101"]), {"explanation": "cuda-out-of-memory"})
    )

    assert sorted(row["student"] for row in everything) == ["alice", "student1"]
    assert [row["student"] for row in oom] == ["alice"]


def test_the_failures_page_names_explanations_by_their_titles(client, ta, student, assignment):
    job_row(student, assignment, status=Status.FAILED, explanation_key="cuda-out-of-memory")
    job_row(student, assignment, status=Status.FAILED)
    client.force_login(ta)

    page = text_of(client.get("/jobs/course/cs101/failed/"))

    assert '<a href="?explanation=cuda-out-of-memory">The GPU ran out of memory</a>' in page
    assert "<td>The GPU ran out of memory</td>" in page
    assert '<option value="cuda-out-of-memory" >The GPU ran out of memory</option>' in page
    assert "<td>No explanation</td>" in page
    assert ">cuda-out-of-memory<" not in page
    assert '<label for="failures-explanation">Explanation</label>' in page


@pytest.mark.parametrize("name", ["jobs:course-jobs-csv", "jobs:course-failures-csv"])
def test_only_course_staff_export_csv(client, name, student, outsider, ta):
    url = reverse(name, args=["cs101"])
    assert client.get(url).status_code == 302  # anonymous: to the login page
    client.force_login(student)
    assert client.get(url).status_code == 403
    client.force_login(outsider)
    assert client.get(url).status_code == 404
    client.force_login(ta)
    assert client.post(url).status_code == 405
    assert client.get(url).status_code == 200
