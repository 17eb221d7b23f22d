"""Downloads stay inside the job directory: no '..', no absolute paths, no symlinks."""

import io
import os
import zipfile

import pytest
from django.urls import reverse

from courses.models import Assignment
from jobs import files
from jobs.models import Job, Status
from tests.conftest import dispatch, submit_form, wait_for_status

pytestmark = pytest.mark.slurm

PLANTING_SCRIPT = """\
ln -s /etc/passwd leak
ln -s /etc linkdir
mkdir -p sub
echo inside > sub/ok.txt
ln -s ../../../../../../etc/passwd sub/up
echo planted
"""


@pytest.fixture
def finished_job(client, student, course) -> Job:
    Assignment.objects.create(course=course, slug="plant", title="Plant", script_template=PLANTING_SCRIPT, gpus=0)
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "plant"]), submit_form(gpus="0"))
    return wait_for_status(dispatch(Job.objects.get()), Status.COMPLETED)


def download(client, job, path):
    return client.get(reverse("jobs:job-file", args=[job.uuid, path]))


def test_a_symlink_the_job_planted_is_not_followed(client, finished_job):
    assert os.path.islink(os.path.join(finished_job.workdir, "leak"))
    for path in ("leak", "linkdir/passwd", "sub/up"):
        assert download(client, finished_job, path).status_code == 404


def test_parent_and_absolute_paths_are_refused(client, finished_job):
    for path in ("../job.sh", "sub/../../x", "sub/../ok.txt", "%2Fetc%2Fpasswd", "./job.sh"):
        assert download(client, finished_job, path).status_code == 404
    with pytest.raises(files.UnsafePath):
        files.open_file(finished_job.workdir, "/etc/passwd")


def test_regular_files_in_subdirectories_download(client, finished_job):
    response = download(client, finished_job, "sub/ok.txt")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"inside\n"


def test_the_file_list_and_zip_leave_symlinks_out(client, finished_job):
    page = client.get(reverse("jobs:job-detail", args=[finished_job.uuid])).content.decode()
    assert "sub/ok.txt" in page
    assert ">leak<" not in page
    archive = client.get(reverse("jobs:job-zip", args=[finished_job.uuid]))
    names = zipfile.ZipFile(io.BytesIO(b"".join(archive.streaming_content))).namelist()
    assert not any(name.endswith(("/leak", "/up")) or "linkdir" in name for name in names)
    assert any(name.endswith("/sub/ok.txt") for name in names)


def test_only_a_bounded_tail_of_a_large_log_is_read(tmp_path):
    (tmp_path / "big.out").write_bytes(b"x" * 5_000_000 + b"\nlast line\n")
    text, cut = files.tail(str(tmp_path), "big.out", 1024)
    assert cut and len(text) == 1024 and text.endswith("last line\n")
