"""A class clicking at once, on the demo's settings (PostgreSQL, gunicorn, worker and beat running as
the service account): twenty simultaneous submissions, cancels and double-clicked retries; and every
other form that changes something (note, review, policy, lab, roster) sent twice at the same moment.
No answer is an HTTP 500, no job is lost or sent twice, nothing is done twice."""

import re
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.utils import timezone

from courses.models import Role
from jobs.models import Job, Status
from tests.behaviour_helpers import slurm_job_ids
from tests.conftest import job_row, make_user, submit_form
from tests.http_helpers import celery_queue_clear, form_fields
from tests.service_account import running_portal, service_media  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("service_media")]

DEMO = {"LABQUEUE_DEMO": "1", "LABQUEUE_DEBUG": "1", "LABQUEUE_SYNC_SECONDS": "2"}


def post_form(browser, base: str, page_path: str, action: str, **fields: str):
    page = browser.get(base + page_path, timeout=60)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    return browser.post(
        base + action,
        data={"csrfmiddlewaretoken": token, **fields},
        headers={"Referer": page.url},
        timeout=60,
        allow_redirects=False,
    )


def wait_until(condition, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        statuses = Counter(Job.objects.values_list("status", flat=True))
        assert time.monotonic() < deadline, f"timed out; jobs by status: {dict(statuses)}"
        time.sleep(1)


def test_twenty_submissions_cancels_and_double_retries_at_once_get_no_500_and_lose_no_job(
    settings, tmp_path, course, assignment
):
    celery_queue_clear()
    assignment.script_template = "sleep 600\n"  # still running when the cancels come
    assignment.save()
    students = []
    for number in range(1, 5):
        user = make_user(f"student{number}", f"student{number}")
        course.enrollments.create(user=user, role=Role.STUDENT)
        students.append(user)
    data = {key: value for key, value in submit_form().items() if key != "uploads"}

    with running_portal(settings, tmp_path, workers=1, **DEMO) as portal:
        portal.start_beat()
        browsers = [portal.browser_for(user) for user in students]
        for browser in browsers:  # each student has had the portal open before (a CSRF cookie of their own)
            assert browser.get(f"{portal.base}/", timeout=30).status_code == 200
        with ThreadPoolExecutor(max_workers=20) as pool:
            answers = list(pool.map(lambda n: portal.submit(browsers[n % 4], "cs101", "hello", data), range(20)))
        assert [answer.status_code for answer in answers] == [302] * 20, answers[0].text[-3000:]
        jobs = list(Job.objects.filter(assignment=assignment))
        assert len(jobs) == 20 and len({answer.headers["Location"] for answer in answers}) == 20

        wait_until(lambda: not Job.objects.filter(status__in=[Status.QUEUED, Status.SUBMITTING]).exists())
        owner = {job.pk: browsers[[user.pk for user in students].index(job.user_id)] for job in jobs}

        def cancel(job: Job):
            return post_form(owner[job.pk], portal.base, f"/jobs/{job.uuid}/", f"/jobs/{job.uuid}/cancel/")

        with ThreadPoolExecutor(max_workers=20) as pool:
            cancels = list(pool.map(cancel, jobs + jobs))  # every cancel clicked twice
        assert {answer.status_code for answer in cancels} == {302}
        wait_until(lambda: Job.objects.filter(assignment=assignment, status=Status.CANCELLED).count() == 20)

        def retry(job: Job):
            return post_form(owner[job.pk], portal.base, f"/jobs/{job.uuid}/", f"/jobs/{job.uuid}/retry/", same="1")

        with ThreadPoolExecutor(max_workers=20) as pool:
            retries = list(pool.map(retry, jobs[:10] + jobs[:10]))  # ten retries, each double-clicked
        assert {answer.status_code for answer in retries} == {302}
        for first, second in zip(retries[:10], retries[10:], strict=True):
            assert first.headers["Location"] == second.headers["Location"], "both clicks lead to the one new attempt"
        assert Job.objects.filter(assignment=assignment).count() == 30, "ten new attempts, not twenty"

        wait_until(lambda: not Job.objects.filter(status__in=[Status.QUEUED, Status.SUBMITTING]).exists())

    for job in Job.objects.filter(assignment=assignment):
        assert job.status != Status.REJECTED, job.message
        assert slurm_job_ids(job.slurm_name) == {job.slurm_job_id}, "every job sent once"


def test_the_same_submission_form_sent_twice_at_once_gives_one_job_and_both_answers_lead_to_it(
    settings, tmp_path, student, assignment
):
    celery_queue_clear()
    data = {key: value for key, value in submit_form().items() if key != "uploads"}
    with running_portal(settings, tmp_path, workers=1) as portal:
        browser = portal.browser_for(student)
        page = browser.get(f"{portal.base}/courses/cs101/assignments/hello/", timeout=30)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        key = re.search(r'name="submission_key" value="([0-9a-f]{32})"', page.text)
        assert key, page.text[-3000:]
        key = key.group(1)
        form = {**data, "csrfmiddlewaretoken": token, "submission_key": key}

        def send(_):
            return browser.post(
                f"{portal.base}/jobs/submit/cs101/hello/",
                data=form,
                headers={"Referer": page.url},
                timeout=60,
                allow_redirects=False,
            )

        with ThreadPoolExecutor(max_workers=2) as pool:
            first, second = pool.map(send, range(2))
        again = send(3)  # and once more after both answered (a reload of the POST)

        assert first.status_code == second.status_code == again.status_code == 302
        job = Job.objects.get(user=student)
        assert first.headers["Location"] == second.headers["Location"] == again.headers["Location"]
        assert first.headers["Location"] == f"/jobs/{job.uuid}/"
        fresh = portal.submit(browser, "cs101", "hello", data)  # the form shown again: a new key, a new job
        assert fresh.status_code == 302 and Job.objects.filter(user=student).count() == 2


def test_a_note_sent_twice_at_once_is_added_once(settings, tmp_path, student, ta, assignment):
    job = job_row(student, assignment, status=Status.FAILED)
    with running_portal(settings, tmp_path, workers=0) as portal:
        browser = portal.browser_for(ta)

        def note(text: str):
            return post_form(browser, portal.base, f"/jobs/{job.uuid}/", f"/jobs/{job.uuid}/notes/", text=text)

        with ThreadPoolExecutor(max_workers=2) as pool:
            answers = list(pool.map(note, ["Check line 12 of train.py."] * 2))
        assert [answer.status_code for answer in answers] == [302, 302]
        assert note("A second, different note.").status_code == 302
        assert list(job.notes.values_list("text", flat=True)) == [
            "Check line 12 of train.py.",
            "A second, different note.",
        ]


def twice_at_once(browser, base: str, page_path: str, form: dict[str, str], action: str = ""):
    """A double click: the same form, with the page's CSRF token, posted twice at the same moment."""
    page = browser.get(base + page_path, timeout=60)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)

    def send(_):
        return browser.post(
            base + (action or page_path),
            data={**form, "csrfmiddlewaretoken": token},
            headers={"Referer": page.url},
            timeout=60,
            allow_redirects=False,
        )

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(send, range(2)))


ROSTER = "netid,email,name,role\ninstructor1,,,instructor\nstudent1,,,student\nstudent4,,Pat Newcomer,student\n"


def test_each_staff_form_sent_twice_at_once_has_one_effect_and_answers_both(
    settings, tmp_path, student, ta, instructor, course, assignment
):
    failed = job_row(student, assignment, status=Status.FAILED)
    course.lab_sessions.all().delete()
    with running_portal(settings, tmp_path, workers=0) as portal:
        staff, teacher = portal.browser_for(ta), portal.browser_for(instructor)

        page = f"/jobs/{failed.uuid}/"
        answers = twice_at_once(staff, portal.base, page, {}, action=f"/jobs/{failed.uuid}/review/")
        assert [answer.status_code for answer in answers] == [302, 302]
        assert failed.events.filter(cause="Marked as reviewed.").count() == 1

        policy = "/courses/cs101/policy/"
        shown = form_fields(teacher.get(portal.base + policy, timeout=60).text, containing="max_minutes_per_job")
        answers = twice_at_once(teacher, portal.base, policy, {**shown, "max_minutes_per_job": "25"})
        assert [answer.status_code for answer in answers] == [302, 302], answers[0].text[-2000:]
        course.refresh_from_db()
        assert course.max_minutes_per_job == 25

        labs = "/courses/cs101/labs/"
        start = timezone.now().replace(second=0, microsecond=0) + timedelta(days=1)
        lab = {"starts_at": f"{start:%Y-%m-%dT%H:%M}", "ends_at": f"{start + timedelta(hours=1):%Y-%m-%dT%H:%M}"}
        answers = twice_at_once(teacher, portal.base, labs, {**lab, "nodes": "1"})
        assert [answer.status_code for answer in answers] == [302, 302]
        assert course.lab_sessions.count() == 1

        roster = "/courses/cs101/roster/"
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', teacher.get(portal.base + roster).text)
        preview = teacher.post(
            portal.base + roster,
            data={"csrfmiddlewaretoken": token.group(1), "preview": "1"},
            files={"roster": ("roster.csv", ROSTER.encode())},
            headers={"Referer": portal.base + roster},
            timeout=60,
        )
        assert preview.status_code == 200
        confirm = {**form_fields(preview.text, containing="confirm"), "confirm": "1"}
        confirm.pop("csrfmiddlewaretoken")
        answers = twice_at_once(teacher, portal.base, roster, confirm)
        assert [answer.status_code for answer in answers] == [302, 302], [a.text[-1500:] for a in answers]
        assert answers[0].headers["Location"] == answers[1].headers["Location"]
        assert sorted(course.enrollments.values_list("user__netid", flat=True)) == [
            "instructor1",
            "student1",
            "student4",
        ]
