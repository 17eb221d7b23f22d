"""Download all (zip): a job whose files add up to exactly the cap is served, and the zip is compressed.

No cluster: the job is submitted through the view, then its directory gets the files a finished job
would have left there.
"""

import io
import zipfile
from pathlib import Path

import pytest
from django.urls import reverse

from jobs.models import Job

MB = 1024 * 1024


@pytest.fixture
def job(finished_job) -> Job:
    return finished_job


def write_files(job: Job, files: dict[str, bytes]) -> None:
    for name, content in files.items():
        path = Path(job.workdir, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)


def download(client, job: Job) -> bytes:
    response = client.get(reverse("jobs:job-zip", args=[job.uuid]))
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    return b"".join(response.streaming_content)


def test_files_adding_up_to_exactly_the_cap_are_served(client, job, settings):
    settings.LABQUEUE_ZIP_MAX_BYTES = 1 * MB
    files = {"job.out": b"o" * (MB // 2), "results/model.bin": b"m" * (MB // 2)}
    write_files(job, files)

    archive = zipfile.ZipFile(io.BytesIO(download(client, job)))

    assert {name.split("/", 1)[1]: archive.read(name) for name in archive.namelist()} == files


def test_the_zip_is_compressed_so_repetitive_logs_download_much_smaller(client, job, settings):
    settings.LABQUEUE_ZIP_MAX_BYTES = 10 * MB
    log = b"".join(f"epoch {n % 10} step {n} loss 0.25\n".encode() for n in range(20_000))
    write_files(job, {"job.out": log, "results/metrics.csv": b"step,loss\n" + b"1,0.25\n" * 20_000})

    body = download(client, job)
    archive = zipfile.ZipFile(io.BytesIO(body))

    assert [info.compress_type for info in archive.infolist()] == [zipfile.ZIP_DEFLATED, zipfile.ZIP_DEFLATED]
    assert len(body) < len(log) // 5
    assert archive.read(f"hello-{str(job.uuid)[:8]}/job.out") == log
