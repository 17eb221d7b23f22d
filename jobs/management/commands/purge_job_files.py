"""Remove the job directories and staged uploads of finished jobs older than the retention period, and the
uploads kept for refused forms whose session has ended."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.template.defaultfilters import filesizeformat

from jobs.retention import FilesRemoval, job_files_purge, kept_uploads_purge


class Command(BaseCommand):
    help = (
        "Remove the files (job directory and staged uploads) of finished jobs that ended more than DAYS days ago, "
        "and the uploads kept for refused submissions whose session has ended. Job records and usage records "
        "stay. See docs/records.md."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--older-than",
            type=int,
            metavar="DAYS",
            help="Jobs that ended more than DAYS days ago (default: LABQUEUE_RETAIN_JOB_FILES_DAYS).",
        )
        parser.add_argument("--dry-run", action="store_true", help="Print what would be removed; remove nothing.")

    def handle(self, *args, older_than: int | None, dry_run: bool, **options) -> None:
        days = older_than if older_than is not None else settings.LABQUEUE_RETAIN_JOB_FILES_DAYS
        if older_than is None and not days:
            raise CommandError(
                "No retention period: LABQUEUE_RETAIN_JOB_FILES_DAYS is not set (job files are kept for good). "
                "Give --older-than DAYS, or set the variable (docs/records.md)."
            )
        if days < 0:
            raise CommandError("--older-than takes a number of days, 0 or more.")
        verb = "would remove" if dry_run else "removed"
        jobs = files = size = uploads = upload_size = 0
        failed: list[FilesRemoval] = []
        for removal in job_files_purge(older_than_days=days, dry_run=dry_run):
            if removal.error:
                failed.append(removal)
                self.stderr.write(f"could not remove: {_describe(removal)}: {removal.error}")
                continue
            jobs += 1
            files, size = files + removal.files, size + removal.bytes
            uploads, upload_size = uploads + removal.uploads, upload_size + removal.upload_bytes
            self.stdout.write(f"{verb}: {_describe(removal)}: {_amounts(removal)}")
        kept = kept_uploads_purge(dry_run=dry_run)
        self.stdout.write(
            f"{verb}: uploads kept for {kept.folders} refused submission(s) whose session has ended: "
            f"{kept.files} file(s), {filesizeformat(kept.bytes)}"
        )
        self.stdout.write(
            f"Total ({'dry run, nothing removed' if dry_run else 'removed'}): {jobs} job(s) finished more than "
            f"{days} day(s) ago; job directories {files} file(s), {filesizeformat(size)}; staged uploads "
            f"{uploads} file(s), {filesizeformat(upload_size)}; uploads of refused submissions {kept.files} "
            f"file(s), {filesizeformat(kept.bytes)}. Job records and usage records are kept."
        )
        if failed:
            raise CommandError(
                f"The files of {len(failed)} job(s) could not be removed (reasons above); they are left as they "
                "were and the next run tries again."
            )


def _describe(removal: FilesRemoval) -> str:
    job = removal.job
    finished = job.ended_at or job.updated_at
    where = f"{job.assignment.course.slug}/{job.assignment.slug}"
    return f"job {job.uuid} of {job.run_as} ({where}, {job.status}, ended {finished:%Y-%m-%d}) {job.workdir}"


def _amounts(removal: FilesRemoval) -> str:
    directory = (
        "the portal cannot read the directory, so its size is unknown"
        if removal.unreadable
        else f"{removal.files} file(s), {filesizeformat(removal.bytes)}"
    )
    return f"{directory}; uploads {removal.uploads} file(s), {filesizeformat(removal.upload_bytes)}"
