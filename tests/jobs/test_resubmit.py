"""Edit and resubmit: the submission form prefilled from one of the student's attempts, the attempt's files
kept, the course's caps and the attempt cap checked as for any submission, one job per form, owner only."""

import pytest
from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from courses.policy import Resources
from jobs.models import Job, JobEvent, Status
from jobs.services import job_resubmit
from jobs.staging import staging_dir
from tests.conftest import job_row, submit_form

NOTES = b"notes of attempt one 51c2\n"
CONFIG = b"batch_size=64\n"


@pytest.fixture
def failed_job(client, student, assignment, dataset) -> Job:
    """A failed attempt with changed parameters, a data set, its own resources and two uploaded files
    (recorded as the sync records a failure)."""
    assignment.datasets.add(dataset)
    client.force_login(student)
    uploads = [SimpleUploadedFile("notes.txt", NOTES), SimpleUploadedFile("config.txt", CONFIG)]
    form = submit_form(param_EPOCHS="3", param_SIZE="large", param_NAME="bs64", minutes="7", dataset=str(dataset.pk))
    response = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), {**form, "uploads": uploads})
    assert response.status_code == 302
    job = Job.objects.get()
    Job.objects.filter(pk=job.pk).update(status=Status.FAILED, slurm_state="FAILED", exit_code=1)
    job.refresh_from_db()
    return job


def url(job: Job) -> str:
    return reverse("jobs:job-resubmit", args=[job.uuid])


def edited(client, job: Job, key: str = "a" * 32, **overrides) -> dict:
    """The form as the browser sends it back: what it was prefilled with, `overrides` changed."""
    data = submit_form(
        param_EPOCHS="3",
        param_SIZE="large",
        param_NAME="bs64",
        minutes="7",
        dataset=str(job.dataset_id),
        keep=["config.txt", "notes.txt"],
        submission_key=key,
    )
    data.update(overrides)
    return data


def staged(job: Job) -> dict[str, bytes]:
    folder = staging_dir(str(job.uuid))
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())} if folder.is_dir() else {}


def test_the_job_page_links_to_edit_and_resubmit_for_its_owner_only(client, failed_job, ta):
    assert url(failed_job) in client.get(reverse("jobs:job-detail", args=[failed_job.uuid])).content.decode()
    client.force_login(ta)
    assert url(failed_job) not in client.get(reverse("jobs:job-detail", args=[failed_job.uuid])).content.decode()


def test_the_form_opens_prefilled_with_the_attempts_parameters_data_set_resources_and_files(
    client, failed_job, dataset
):
    response = client.get(url(failed_job))
    page = response.content.decode()
    assert response.status_code == 200
    assert 'name="param_EPOCHS" value="3"' in page
    assert 'name="param_NAME" value="bs64"' in page
    assert '<option value="large" selected>' in page
    assert f'<option value="{dataset.pk}" selected>' in page
    assert 'name="minutes" value="7"' in page and 'name="gpus" value="1"' in page
    assert "kept from attempt 1: config.txt" in page and "kept from attempt 1: notes.txt" in page
    assert 'name="keep" value="notes.txt"' in page and "checked" in page
    assert 'name="submission_key" value="' in page


def test_a_changed_parameter_makes_a_new_attempt_with_the_kept_files_linked_to_the_earlier_one(
    client, failed_job, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as enqueued:
        response = client.post(url(failed_job), edited(client, failed_job, param_NAME="bs16"))
    new = Job.objects.exclude(pk=failed_job.pk).get()
    assert response.status_code == 302 and response["Location"] == reverse("jobs:job-detail", args=[new.uuid])
    assert len(enqueued) == 1, "sent to the cluster like any submission"
    assert new.parameters == {**failed_job.parameters, "NAME": "bs16"}
    assert new.dataset_id == failed_job.dataset_id and new.resources == failed_job.resources
    assert new.resubmit_of_id == failed_job.pk and new.retry_of_id is None and new.attempt == 2
    assert new.status == Status.QUEUED and new.user_id == failed_job.user_id and new.created_by is None
    assert "NAME=bs16" in new.script or "NAME='bs16'" in new.script
    assert staged(new) == {"config.txt": CONFIG, "notes.txt": NOTES}
    assert staged(failed_job) == {"config.txt": CONFIG, "notes.txt": NOTES}, "the earlier attempt keeps its files"
    assert JobEvent.objects.filter(job=new, cause__startswith="Edited and resubmitted from attempt 1.").exists()
    page = client.get(response["Location"]).content.decode()
    assert "bs16" in page and "Edited and resubmitted from" in page
    assert reverse("jobs:job-detail", args=[failed_job.uuid]) in page
    assert failed_job.can_retry and not Job.objects.filter(retry_of=failed_job).exists(), "Retry stays available"


def test_a_replacement_file_replaces_the_kept_one_and_an_unticked_file_is_left_out(client, failed_job):
    replacement = SimpleUploadedFile("config.txt", b"batch_size=16\n")
    client.post(url(failed_job), edited(client, failed_job, keep=["config.txt"], uploads=[replacement]))
    new = Job.objects.exclude(pk=failed_job.pk).get()
    assert staged(new) == {"config.txt": b"batch_size=16\n"}


def test_resources_over_the_courses_cap_are_refused_with_its_message_and_what_was_typed_is_kept(client, failed_job):
    extra = SimpleUploadedFile("extra.txt", b"chosen on the refused try\n")
    response = client.post(
        url(failed_job), edited(client, failed_job, param_NAME="typed-by-hand", minutes="90", uploads=[extra])
    )
    page = response.content.decode()
    assert response.status_code == 400
    assert "This course allows at most 30 minutes per job; you asked for 90." in page
    assert 'name="param_NAME" value="typed-by-hand"' in page and 'name="minutes" value="90"' in page
    assert "extra.txt" in page, "the file chosen on the refused try is kept"
    assert 'name="submission_key" value="' + "a" * 32 + '"' in page
    assert Job.objects.count() == 1
    token = page.split('name="upload_token" value="')[1].split('"')[0]

    response = client.post(
        url(failed_job), edited(client, failed_job, param_NAME="typed-by-hand", minutes="20", upload_token=token)
    )
    new = Job.objects.exclude(pk=failed_job.pk).get()
    assert response.status_code == 302 and new.minutes == 20 and new.parameters["NAME"] == "typed-by-hand"
    assert staged(new) == {"config.txt": CONFIG, "extra.txt": b"chosen on the refused try\n", "notes.txt": NOTES}


def test_the_attempt_cap_reached_is_refused_clearly_and_nothing_typed_is_lost(client, failed_job, assignment):
    assignment.max_attempts = 1
    assignment.save()
    page = client.get(url(failed_job)).content.decode()
    assert "This assignment allows 1 attempts per student; 1 used." in page
    response = client.post(url(failed_job), edited(client, failed_job, param_NAME="one-more"))
    page = response.content.decode()
    assert response.status_code == 400
    assert "This assignment allows 1 attempts per student and 1 have been used. Ask your instructor" in page
    assert 'name="param_NAME" value="one-more"' in page
    assert Job.objects.count() == 1


def test_sending_the_form_twice_makes_one_job(client, failed_job, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as enqueued:
        first = client.post(url(failed_job), edited(client, failed_job, param_NAME="bs16"))
        second = client.post(url(failed_job), edited(client, failed_job, param_NAME="bs16"))
    assert first.status_code == second.status_code == 302
    assert first["Location"] == second["Location"]
    assert Job.objects.filter(resubmit_of=failed_job).count() == 1 and Job.objects.count() == 2
    assert len(enqueued) == 1


def test_each_showing_of_the_form_may_make_its_own_new_attempt(client, failed_job):
    """Unlike Retry, an attempt may be edited and resubmitted more than once (batch 32, then batch 16)."""
    client.post(url(failed_job), edited(client, failed_job, key="b" * 32, param_NAME="bs32"))
    client.post(url(failed_job), edited(client, failed_job, key="c" * 32, param_NAME="bs16"))
    names = sorted(job.parameters["NAME"] for job in Job.objects.filter(resubmit_of=failed_job))
    assert names == ["bs16", "bs32"]
    assert sorted(Job.objects.values_list("attempt", flat=True)) == [1, 2, 3]


def test_a_classmate_and_a_ta_of_another_course_get_404(client, failed_job, classmate, other_ta):
    for person in (classmate, other_ta):
        client.force_login(person)
        assert client.get(url(failed_job)).status_code == 404
        assert client.post(url(failed_job), edited(client, failed_job)).status_code == 404
    assert Job.objects.count() == 1


def test_the_courses_ta_sees_the_job_but_may_not_resubmit_as_the_student(client, failed_job, ta):
    client.force_login(ta)
    assert client.get(reverse("jobs:job-detail", args=[failed_job.uuid])).status_code == 200
    response = client.get(url(failed_job))
    assert response.status_code == 403
    assert "Only the student who submitted this job can do that." in response.content.decode()
    assert client.post(url(failed_job), edited(client, failed_job)).status_code == 403
    assert Job.objects.count() == 1


def test_anonymous_visitors_go_to_the_login_page_and_other_methods_are_refused(client, failed_job):
    assert client.put(url(failed_job)).status_code == 405
    client.logout()
    response = client.get(url(failed_job))
    assert response.status_code == 302 and "login" in response["Location"]


def test_a_running_attempt_can_be_resubmitted_and_keeps_running(client, failed_job):
    Job.objects.filter(pk=failed_job.pk).update(status=Status.RUNNING, exit_code=None)
    page = client.get(url(failed_job)).content.decode()
    assert "attempt 1 keeps running" in page
    response = client.post(url(failed_job), edited(client, failed_job, param_NAME="bs16"))
    assert response.status_code == 302
    failed_job.refresh_from_db()
    assert failed_job.status == Status.RUNNING and not failed_job.cancel_requested
    assert Job.objects.get(resubmit_of=failed_job).status == Status.QUEUED


def test_a_running_attempt_over_the_courses_job_limit_is_refused_with_the_limit(client, failed_job, course):
    Job.objects.filter(pk=failed_job.pk).update(status=Status.RUNNING, exit_code=None)
    course.max_queued_jobs_per_student = 1
    course.save()
    response = client.post(url(failed_job), edited(client, failed_job, param_NAME="bs16"))
    assert response.status_code == 400
    assert "This course allows at most 1 job waiting or running per student; you have 1." in response.content.decode()
    assert Job.objects.count() == 1


def test_an_attempt_without_files_says_so(client, student, assignment):
    job = job_row(student, assignment, status=Status.CANCELLED, parameters={"EPOCHS": 4, "NAME": "x"})
    client.force_login(student)
    page = client.get(url(job)).content.decode()
    assert "Attempt 1 had no uploaded files kept." in page
    assert 'name="param_EPOCHS" value="4"' in page


def test_a_student_dropped_from_the_course_is_told_no_new_job_can_run(client, failed_job, student, course):
    course.enrollments.filter(user=student).delete()
    response = client.get(url(failed_job))
    assert response.status_code == 403
    assert "You are no longer enrolled in" in response.content.decode()
    assert client.post(url(failed_job), edited(client, failed_job)).status_code == 403
    assert Job.objects.count() == 1


def test_an_attempt_whose_files_were_removed_says_to_choose_them_again(client, failed_job):
    staging_dir(str(failed_job.uuid)).joinpath("notes.txt").unlink()
    staging_dir(str(failed_job.uuid)).joinpath("config.txt").unlink()
    Job.objects.filter(pk=failed_job.pk).update(files_purged_at=timezone.now())
    page = client.get(url(failed_job)).content.decode()
    assert "were removed under the portal's retention policy: choose them again below" in page
    stale = client.post(url(failed_job), edited(client, failed_job, keep=["notes.txt"], param_NAME="bs16"))
    assert stale.status_code == 400, "a form opened before the files went cannot send them"
    assert "The file notes.txt of that attempt is no longer kept" in stale.content.decode()
    client.post(url(failed_job), edited(client, failed_job, keep=[], param_NAME="bs16"))
    assert staged(Job.objects.get(resubmit_of=failed_job)) == {}


def test_the_resubmit_service_itself_refuses_anyone_but_the_jobs_owner(failed_job, ta):
    """A second line behind the view's own check: whoever calls the service, only the owner resubmits."""
    with pytest.raises(PermissionDenied) as refused:
        job_resubmit(
            job=failed_job,
            user=ta,
            submission_key="",
            values=failed_job.parameters,
            resources=Resources(**failed_job.resources),
            dataset=None,
            uploads=[],
        )
    assert str(refused.value) == "Only the student who submitted this job can resubmit it."
    assert Job.objects.count() == 1
