"""Attacks through the files a job leaves in its directory: names that break pages, hard links to
files of other accounts, directories too deep or too large to walk, logs crafted to make the
explanation rules slow, crafted log page numbers.

The web requests are real (Django's test client); the job directory is a real directory under the
test's job root, owned by the student's POSIX account as the portal makes it; one test runs a real
job on the lab cluster that writes the hostile file names itself.
"""

import io
import os
import pwd
import subprocess
import zipfile
from pathlib import Path

import pytest
from django.urls import reverse

from courses.models import Assignment
from jobs import explanations, files
from jobs.models import Job, Status
from tests.conftest import dispatch, submit_form, wait_for_status

STUDENT_ACCOUNT = "student1"
CLASSMATE_ACCOUNT = "student2"


def give_to(path: Path, account: str) -> None:
    user = pwd.getpwnam(account)
    os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)


@pytest.fixture
def job(finished_job) -> Job:
    """The finished job's directory, owned by the student with job.out and results/out.txt in it."""
    workdir = Path(finished_job.workdir)
    (workdir / "results").mkdir()
    (workdir / "job.out").write_text("epoch 1 done\n")
    (workdir / "results" / "out.txt").write_text("done run\n")
    for path in (workdir, workdir / "results", workdir / "job.out", workdir / "results" / "out.txt"):
        give_to(path, STUDENT_ACCOUNT)
    return finished_job


def page(client, job: Job) -> str:
    response = client.get(reverse("jobs:job-detail", args=[job.uuid]))
    assert response.status_code == 200
    return response.content.decode()


def listed(client, job: Job) -> list[str]:
    return [f.path for f in page_files(client, job)]


def page_files(client, job: Job) -> list:
    response = client.get(reverse("jobs:job-detail", args=[job.uuid]))
    assert response.status_code == 200
    return response.context["files"]


def download(client, job: Job, path: str):
    return client.get(reverse("jobs:job-file", args=[job.uuid, path]))


def zip_names(client, job: Job) -> list[str]:
    response = client.get(reverse("jobs:job-zip", args=[job.uuid]))
    assert response.status_code == 200
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    return sorted(name.split("/", 1)[1] for name in archive.namelist())


# ---- names ----


@pytest.mark.slurm
def test_a_real_job_writing_a_file_named_with_a_line_break_keeps_its_pages_and_zips_only_what_is_linked(
    client, student, ta, course
):
    Assignment.objects.create(
        course=course,
        slug="names",
        title="Odd names",
        script_template="echo hi > $'new\\nline.txt'\necho red > $'esc\\x1b[31mred.txt'\necho ok\n",
        parameters=[],
        gpus=0,
        cpus=1,
        mem_mb=500,
        minutes=5,
    )
    client.force_login(student)
    data = {k: v for k, v in submit_form(gpus="0").items() if not k.startswith("param_")}
    assert client.post(reverse("jobs:job-create", args=["cs101", "names"]), data).status_code == 302
    job = wait_for_status(dispatch(Job.objects.get()), Status.COMPLETED)
    assert (Path(job.workdir) / "new\nline.txt").read_text() == "hi\n", "the job really wrote the file"

    for viewer in (student, ta):
        client.force_login(viewer)
        text = page(client, job)
        assert "new\\nline.txt" in text and "esc\\x1b[31mred.txt" in text, "shown with the characters made visible"
        assert "not offered for download, view or the zip" in text
    linked = sorted(f.path for f in page_files(client, job) if f.linkable)
    assert "new\nline.txt" not in linked and zip_names(client, job) == linked, "the zip holds what the page links"


def test_a_file_named_with_a_carriage_return_is_neither_downloaded_nor_zipped_and_the_refusal_says_why(
    client, student, job
):
    odd = Path(job.workdir) / "car\rriage.txt"
    odd.write_text("data\n")
    give_to(odd, STUDENT_ACCOUNT)
    client.force_login(student)

    response = download(client, job, "car\rriage.txt")

    assert response.status_code == 404
    assert "its name holds a line break or another control character" in response.content.decode()
    assert zip_names(client, job) == ["job.out", "results/out.txt"]


@pytest.mark.parametrize(
    ("name", "linkable", "shown"),
    [
        ("with space.txt", True, "with space.txt"),  # 32, the first printable character
        ("tilde~.txt", True, "tilde~.txt"),  # 126, the last one before DEL
        ("unit\x1fsep.txt", False, "unit\\x1fsep.txt"),  # 31
        ("del\x7f.txt", False, "del\\x7f.txt"),  # 127
        ("c1\x9f.txt", False, "c1\\x9f.txt"),  # 159, the last C1 control
        ("nbsp\xa0.txt", True, "nbsp\xa0.txt"),  # 160, printable again
        ("back\\slash.txt", False, "back\\slash.txt"),  # a folder separator to Windows' unzip
        (os.fsdecode(b"caf\xe9.txt"), False, "caf\\udce9.txt"),  # Latin-1, not UTF-8
        (os.fsdecode(b"low\x80.txt"), False, "low\\udc80.txt"),  # the first byte os.fsdecode keeps as U+DC80
        (os.fsdecode(b"high\xff.txt"), False, "high\\udcff.txt"),  # and the last, as U+DCFF
    ],
)
def test_a_name_is_linked_unless_it_holds_a_character_the_rule_refuses_which_is_then_made_visible(
    client, student, job, name, linkable, shown
):
    odd = Path(job.workdir) / name
    odd.write_text("data\n")
    give_to(odd, STUDENT_ACCOUNT)
    client.force_login(student)

    [entry] = [f for f in page_files(client, job) if f.path == name]

    assert (entry.linkable, entry.shown_path) == (linkable, shown)


# ---- owners and links ----


def test_a_hard_link_to_a_classmates_file_planted_in_the_job_directory_is_neither_listed_nor_served(
    client, student, job, tmp_path
):
    # A classmate's result the web server may read. Where fs.protected_hardlinks is off, the student's job
    # can hard-link it into its own directory (root does it here: this machine has the protection on).
    theirs = tmp_path / "classmate-results.csv"
    theirs.write_text("student2,98\n")
    give_to(theirs, CLASSMATE_ACCOUNT)
    os.link(theirs, Path(job.workdir) / "grades.csv")
    client.force_login(student)

    assert "grades.csv" not in listed(client, job)
    assert download(client, job, "grades.csv").status_code == 404
    assert zip_names(client, job) == ["job.out", "results/out.txt"]


def test_a_job_log_swapped_for_a_link_to_a_classmates_file_shows_nothing_on_the_job_page(
    client, student, job, tmp_path
):
    theirs = tmp_path / "classmate-results.csv"
    theirs.write_text("student2,98\n")
    give_to(theirs, CLASSMATE_ACCOUNT)
    log = Path(job.workdir) / "job.out"
    log.unlink()
    log.symlink_to(theirs)
    client.force_login(student)

    shown = page(client, job)

    assert "student2,98" not in shown
    output = shown.split("Output (end of job.out)", 1)[1].split("Errors (end of", 1)[0]
    assert output.split('aria-label="Output">', 1)[1].split("</pre>", 1)[0] == "(nothing yet)"
    assert "Showing the last part only" not in output, "nothing was read, so nothing was cut"


def test_a_job_log_that_is_not_utf8_is_shown_with_its_bad_bytes_replaced(client, student, job):
    (Path(job.workdir) / "job.out").write_bytes(b"epoch 1 \xff\xfe done\n")
    client.force_login(student)

    output = page(client, job).split("Output (end of job.out)", 1)[1].split("Errors (end of", 1)[0]

    assert "epoch 1 \ufffd\ufffd done" in output


def test_a_job_log_exactly_as_long_as_the_tail_is_shown_whole_and_one_byte_longer_is_cut(
    client, student, job, settings
):
    settings.LABQUEUE_LOG_TAIL_BYTES = 16
    log = Path(job.workdir) / "job.out"
    client.force_login(student)

    def output() -> str:
        return page(client, job).split("Output (end of job.out)", 1)[1].split("Errors (end of", 1)[0]

    log.write_text("0123456789abcde\n")  # 16 bytes
    assert "Showing the last part only" not in output() and "0123456789abcde" in output()
    log.write_text("x0123456789abcde\n")  # 17
    assert "Showing the last part only" in output() and "x0123" not in output()


def test_a_file_of_another_account_in_the_job_directory_is_neither_listed_nor_served(client, student, job):
    planted = Path(job.workdir) / "results" / "secret.txt"
    planted.write_text("not the student's\n")
    give_to(planted, CLASSMATE_ACCOUNT)
    client.force_login(student)

    assert "results/secret.txt" not in listed(client, job)
    assert download(client, job, "results/secret.txt").status_code == 404
    assert zip_names(client, job) == ["job.out", "results/out.txt"]


def test_a_second_hard_link_to_the_students_own_file_is_neither_listed_nor_served(client, student, job):
    os.link(Path(job.workdir) / "results" / "out.txt", Path(job.workdir) / "copy.txt")
    client.force_login(student)

    assert "copy.txt" not in listed(client, job)
    assert download(client, job, "copy.txt").status_code == 404
    assert download(client, job, "results/out.txt").status_code == 404, "both names of the file are refused"


# ---- walking ----


def test_1300_nested_directories_answer_the_page_and_the_zip_without_walking_past_the_depth_bound(client, student, job):
    fd = os.open(job.workdir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(1300):
            os.mkdir("d", dir_fd=fd)
            os.chown("d", pwd.getpwnam(STUDENT_ACCOUNT).pw_uid, -1, dir_fd=fd, follow_symlinks=False)
            next_fd = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        deep = os.open("deep.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.fchown(deep, pwd.getpwnam(STUDENT_ACCOUNT).pw_uid, -1)
        os.close(deep)
    finally:
        os.close(fd)
    client.force_login(student)

    try:
        assert listed(client, job) == ["job.out", "results/out.txt"]
        assert zip_names(client, job) == ["job.out", "results/out.txt"]
    finally:  # shutil.rmtree (the job root's cleanup) recurses and cannot remove this tree
        subprocess.run(["rm", "-rf", "--", str(Path(job.workdir) / "d")], check=True)


def test_a_directory_with_more_entries_than_the_walk_bound_is_read_only_up_to_the_bound(client, student, job):
    crowd = Path(job.workdir) / "crowd"
    crowd.mkdir()
    give_to(crowd, STUDENT_ACCOUNT)
    uid = pwd.getpwnam(STUDENT_ACCOUNT).pw_uid
    for number in range(files.MAX_SCANNED_ENTRIES + 5000):
        path = crowd / f"f{number:06d}"
        path.touch()
        os.chown(path, uid, -1)
    client.force_login(student)

    assert len(listed(client, job)) == files.MAX_LISTED_FILES
    assert len(zip_names(client, job)) <= files.MAX_SCANNED_ENTRIES


def planted(job: Job, relative: str) -> None:
    """A file the job left at `relative`, with the directories on the way, all the student's."""
    path = Path(job.workdir)
    for part in Path(relative).parts[:-1]:
        path = path / part
        path.mkdir(exist_ok=True)
        give_to(path, STUDENT_ACCOUNT)
    (path / Path(relative).name).write_text("x\n")
    give_to(path / Path(relative).name, STUDENT_ACCOUNT)


def test_the_walk_goes_exactly_max_depth_directories_down(client, student, job, monkeypatch):
    monkeypatch.setattr(files, "MAX_DEPTH", 3)
    planted(job, "d/d/d/at3.txt")
    planted(job, "d/d/d/d/at4.txt")
    client.force_login(student)

    assert zip_names(client, job) == ["d/d/d/at3.txt", "job.out", "results/out.txt"]


def test_the_walk_still_enters_a_directory_with_one_entry_of_its_budget_left_and_none_after(
    client, student, job, monkeypatch
):
    # Read in order: the job directory's 3 entries (crowd, job.out, results), crowd's 6 (f1..f5, zz), then
    # zz's one entry: the budget is spent, so results is never read.
    monkeypatch.setattr(files, "MAX_SCANNED_ENTRIES", 10)
    for number in range(1, 6):
        planted(job, f"crowd/f{number}")
    planted(job, "crowd/zz/inner.txt")
    client.force_login(student)

    names = zip_names(client, job)

    assert "crowd/zz/inner.txt" in names and "results/out.txt" not in names
    assert names == [*(f"crowd/f{number}" for number in range(1, 6)), "crowd/zz/inner.txt", "job.out"]


def test_a_symlink_to_the_students_own_file_is_neither_listed_nor_zipped(client, student, job):
    os.symlink("results/out.txt", Path(job.workdir) / "shortcut.txt")
    client.force_login(student)

    assert listed(client, job) == ["job.out", "results/out.txt"]
    assert zip_names(client, job) == ["job.out", "results/out.txt"]


def test_a_file_the_job_deletes_between_the_directory_read_and_its_stat_is_left_out_and_the_walk_goes_on(
    client, student, job, monkeypatch
):
    for name in ("a.txt", "b.txt", "c.txt"):
        planted(job, f"out/{name}")
    real_scandir = os.scandir

    class Deleting:
        """The directory's entries as read, b.txt removed by the job the moment it has been read."""

        def __init__(self, fd):
            self.scan = real_scandir(fd)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.scan.close()

        def __iter__(self):
            for entry in self.scan:
                if entry.name == "b.txt":
                    os.unlink(Path(job.workdir, "out", "b.txt"))
                yield entry

    monkeypatch.setattr(os, "scandir", Deleting)
    client.force_login(student)

    assert listed(client, job) == ["job.out", "out/a.txt", "out/c.txt", "results/out.txt"]


def test_a_listing_cut_at_its_limit_inside_nested_directories_leaves_no_descriptor_open(
    client, student, job, monkeypatch
):
    monkeypatch.setattr(files, "MAX_LISTED_FILES", 2)
    for number in reversed(range(5)):  # made last to first: the walk goes by name, not by creation
        planted(job, f"a/b/c/f{number}")
    client.force_login(student)
    open_before = len(os.listdir("/proc/self/fd"))

    assert listed(client, job) == ["a/b/c/f0", "a/b/c/f1"]  # the walk stopped three directories down

    assert len(os.listdir("/proc/self/fd")) == open_before


@pytest.mark.timeout(30)  # a FIFO opened without O_NONBLOCK would wait for a writer for ever
@pytest.mark.parametrize("swapped_in", ["directory", "fifo"])
def test_a_directory_swapped_between_the_scan_and_the_open_is_skipped_and_the_walk_goes_on(
    client, student, job, monkeypatch, swapped_in
):
    planted(job, "a/first.txt")
    planted(job, "b/yours.txt")
    planted(job, "c/last.txt")
    workdir = Path(job.workdir)
    real_open = os.open

    def open_swapping_b(path, flags, *args, **kwargs):
        if path == "b" and "dir_fd" in kwargs:  # the job renames b away and puts something else there
            monkeypatch.setattr(os, "open", real_open)
            os.rename(workdir / "b", workdir / "b-scanned")
            if swapped_in == "directory":
                planted(job, "b/swapped-in.txt")
            else:
                os.mkfifo(workdir / "b")
                give_to(workdir / "b", STUDENT_ACCOUNT)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_swapping_b)
    client.force_login(student)

    assert listed(client, job) == ["a/first.txt", "c/last.txt", "job.out", "results/out.txt"]


# ---- logs ----


@pytest.mark.timeout(60)
def test_a_huge_crafted_log_is_explained_by_rules_that_look_at_a_bounded_part_of_it(client, student, job, settings):
    # A site may show a long tail; the job prints one enormous line of "loss " and never "nan": the old
    # NaN rule retried its scan from every "loss" (quadratic: hours for a 1 MB line).
    settings.LABQUEUE_LOG_TAIL_BYTES = 1024 * 1024
    Path(job.workdir, job.stdout_name).write_bytes(b"loss " * (4 * 1024 * 1024 // 5) + b"\nTraceback\n")
    Job.objects.filter(pk=job.pk).update(status=Status.FAILED, slurm_state="FAILED", exit_code=1)
    client.force_login(student)

    response = client.get(reverse("jobs:job-detail", args=[job.uuid]))

    assert response.status_code == 200
    assert response.context["explanation"].key == "nonzero-exit"
    seen = explanations.rule_lines(explanations.log_lines(Job.objects.get(pk=job.pk)))
    assert len(seen) <= explanations.MAX_RULE_LINES
    assert max(len(line) for line in seen) <= explanations.MAX_LINE_CHARS


# ---- log pages ----


@pytest.mark.parametrize(
    ("value", "status"),
    [
        ("abc", 404),
        ("-1", 404),
        ("0", 404),
        ("1e9", 404),
        ("\x00", 404),
        ("\u00b2", 404),  # "²": str.isdigit() says yes, int() says no
        ("4", 200),
        ("99999999999999999999", 200),
        ("9" * 5000, 200),  # more digits than int() converts
    ],
)
def test_a_crafted_log_page_number_answers_404_or_the_last_page_never_a_server_error(
    client, student, job, value, status
):
    Path(job.workdir, job.stdout_name).write_bytes(b"a" * (3 * 64 * 1024 - 10))
    client.force_login(student)

    response = client.get(reverse("jobs:job-log", args=[job.uuid, "out"]), {"page": value})

    assert response.status_code == status
    if status == 200:
        assert "page 3 of 3" in response.content.decode()


# ---- the zip cap ----

ZIP_GROWTH = 3 * 1024 * 1024


def test_a_file_the_job_grows_while_the_zip_is_built_is_zipped_only_up_to_its_checked_size(
    client, student, job, settings, monkeypatch
):
    settings.LABQUEUE_ZIP_MAX_BYTES = 1024 * 1024
    log = Path(job.workdir) / "job.out"
    checked = log.stat().st_size
    open_file = files.open_file

    def grown_on_open(root: str, relative: str) -> int:
        """The job appends to its log between the walk that summed the sizes and the read."""
        if relative == "job.out":
            with log.open("ab") as handle:
                handle.write(b"x" * ZIP_GROWTH)
        return open_file(root, relative)

    monkeypatch.setattr(files, "open_file", grown_on_open)
    client.force_login(student)

    response = client.get(reverse("jobs:job-zip", args=[job.uuid]))

    assert response.status_code == 200
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    sizes = {info.filename.split("/", 1)[1]: info.file_size for info in archive.infolist()}
    assert sizes["job.out"] == checked, "read to the size that was checked, not to the grown end"
    assert archive.read(next(n for n in archive.namelist() if n.endswith("/job.out"))) == b"epoch 1 done\n"
    assert sum(sizes.values()) <= settings.LABQUEUE_ZIP_MAX_BYTES
    assert log.stat().st_size == checked + ZIP_GROWTH, "the job really grew the file"
