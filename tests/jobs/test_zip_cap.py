"""Download all (zip): every file under the size cap (LABQUEUE_ZIP_MAX_BYTES), a clear refusal over it.

No cluster: the job is submitted through the view, then its directory gets the files a finished job
would have left there.
"""

import io
import os
import zipfile
from pathlib import Path

import pytest
from django.urls import reverse

from jobs.models import Job
from tests.http_helpers import page_messages

MB = 1024 * 1024


@pytest.fixture
def job(finished_job) -> Job:
    return finished_job


def write_files(job: Job, files: dict[str, bytes]) -> None:
    for name, content in files.items():
        path = Path(job.workdir, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)


def download(client, job: Job):
    return client.get(reverse("jobs:job-zip", args=[job.uuid]))


def zipped(response) -> dict[str, bytes]:
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert archive.testzip() is None
    return {name.split("/", 1)[1]: archive.read(name) for name in archive.namelist()}


def test_under_the_cap_the_zip_holds_every_file_with_its_content(client, job, settings):
    settings.LABQUEUE_ZIP_MAX_BYTES = 1 * MB
    files = {
        "job.out": b"epoch 1\nepoch 2\n",
        "job.err": b"",
        "results/model.bin": os.urandom(300_000),
        "results/deep/metrics.json": b'{"accuracy": 0.9}',
    }
    write_files(job, files)
    response = download(client, job)
    assert response["Content-Disposition"].startswith(f'attachment; filename="hello-{str(job.uuid)[:8]}.zip"')
    assert zipped(response) == files


def test_over_the_cap_the_download_is_refused_with_a_clear_message_not_a_partial_zip(client, job, settings):
    settings.LABQUEUE_ZIP_MAX_BYTES = 1 * MB
    write_files(job, {"job.out": b"ok\n", "results/a.bin": os.urandom(700_000), "results/b.bin": os.urandom(700_000)})
    response = download(client, job)
    assert response.status_code == 302 and response["Location"] == reverse("jobs:job-detail", args=[job.uuid])
    assert not response.has_header("Content-Disposition")
    page = client.get(response["Location"])
    assert page.status_code == 200
    assert "The job's files add up to more than 1 MB. Download the files one at a time instead." in page_messages(page)


def test_a_job_with_more_files_than_the_page_lists_still_zips_all_of_them(client, job, settings):
    settings.LABQUEUE_ZIP_MAX_BYTES = 1 * MB
    files = {f"frames/{n:04d}.txt": f"frame {n}\n".encode() for n in range(620)}
    write_files(job, files)
    assert zipped(download(client, job)) == files


def test_many_small_files_over_the_cap_together_are_refused(client, job, settings):
    settings.LABQUEUE_ZIP_MAX_BYTES = 1 * MB
    write_files(job, {f"frames/{n:04d}.bin": b"x" * 2048 for n in range(600)})  # 600 x 2 KB = 1.17 MB
    response = download(client, job)
    assert response.status_code == 302
    assert any("more than 1 MB" in message for message in page_messages(client.get(response["Location"])))
