"""A job's files through the API are read as the job page reads them (jobs.files), and the gradebook's CSV
is the page's CSV."""

import io
import zipfile
from pathlib import Path

from django.urls import reverse

from tests.api.conftest import call, problem


def _write(job, name: str, content: bytes) -> None:
    path = Path(job.workdir) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)


def test_a_jobs_files_are_listed_downloaded_and_zipped(client, finished_job, token_for):
    _write(finished_job, "results/out.txt", b"done run\n")
    text, base = token_for(finished_job.user), f"/api/v1/jobs/{finished_job.uuid}"

    listed = call(client, "get", f"{base}/files", text).json()
    one = call(client, "get", f"{base}/files/results/out.txt", text)
    whole = call(client, "get", f"{base}/zip", text)

    assert {"path": "results/out.txt", "size": 9, "offered": True, "problem": None} in listed
    assert b"".join(one.streaming_content) == b"done run\n"
    names = zipfile.ZipFile(io.BytesIO(b"".join(whole.streaming_content))).namelist()
    assert f"hello-{str(finished_job.uuid)[:8]}/results/out.txt" in names


def test_a_file_outside_the_job_directory_is_404(client, finished_job, token_for):
    text, base = token_for(finished_job.user), f"/api/v1/jobs/{finished_job.uuid}"

    for path in ["../../etc/passwd", "missing.txt", "%2e%2e/secret"]:
        assert problem(call(client, "get", f"{base}/files/{path}", text))["status"] == 404


def test_a_token_without_read_files_cannot_download(client, finished_job, token_for):
    text = token_for(finished_job.user, scopes=["read:jobs"])

    assert problem(call(client, "get", f"/api/v1/jobs/{finished_job.uuid}/zip", text))["status"] == 403


def test_the_gradebook_csv_is_the_pages_csv(client, finished_job, instructor, token_for):
    client.force_login(instructor)
    page = client.get(reverse("jobs:gradebook-csv", args=["cs101", "hello"]))
    client.logout()
    url = "/api/v1/courses/cs101/assignments/hello/gradebook"

    csv = call(client, "get", f"{url}?format=csv", token_for(instructor))
    rows = call(client, "get", url, token_for(instructor)).json()

    assert csv.content == page.content
    assert csv["Content-Disposition"] == page["Content-Disposition"]
    assert [(row["netid"], row["attempts"]) for row in rows] == [("student1", 1)]


def test_a_student_gets_no_gradebook(client, finished_job, token_for):
    response = call(client, "get", "/api/v1/courses/cs101/assignments/hello/gradebook", token_for(finished_job.user))

    assert problem(response)["status"] == 403
