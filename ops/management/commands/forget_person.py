"""Remove the personal data of a person who left; keep their jobs and usage under a pseudonym."""

from django.core.management.base import BaseCommand, CommandError
from django.template.defaultfilters import filesizeformat

from ops.forget import ForgetRefused, person_forget


class Command(BaseCommand):
    help = (
        "Forget a person who left: remove their jobs' files, name, e-mail, sign-in links, sessions and "
        "enrollments; keep their job and usage records under a stable pseudonym (former-<hash>) so course "
        "totals still reconcile. See docs/records.md."
    )

    def add_arguments(self, parser):
        parser.add_argument("netid", help="The person's cluster username.")
        parser.add_argument("--dry-run", action="store_true", help="Print what would be done; change nothing.")

    def handle(self, *args, netid: str, dry_run: bool, **options) -> None:
        try:
            report = person_forget(netid=netid, dry_run=dry_run)
        except ForgetRefused as refusal:
            raise CommandError(str(refusal))
        done = "would be" if dry_run else "were"
        for removal in report.files:
            job = removal.job
            if removal.error:
                self.stderr.write(f"could not remove the files of job {job.uuid} ({job.workdir}): {removal.error}")
            else:
                size = filesizeformat(removal.bytes)
                amounts = f"{removal.files} file(s), {size}; uploads: {removal.uploads} file(s)"
                self.stdout.write(f"{'would remove' if dry_run else 'removed'}: files of job {job.uuid}: {amounts}")
        if report.failed:
            raise CommandError(
                f"The files of {len(report.failed)} job(s) could not be removed (reasons above), so nothing else was "
                f"changed and {netid} is not forgotten yet. Fix what is named (or remove those directories as root), "
                "then run this again."
            )
        self.stdout.write(
            f"{netid} {'would become' if dry_run else 'is now'} {report.pseudonym}: name, e-mail and password "
            f"{done} removed; {report.social_accounts} campus sign-in link(s) and {report.email_addresses} e-mail "
            f"address(es) {done} deleted; {report.sessions} session(s) {done} ended."
        )
        self.stdout.write(
            f"Kept under {report.pseudonym}: {report.jobs} job record(s) (parameters, scripts and messages "
            f"cleared; {report.notes} staff note(s) on them {done} deleted) and {report.usage_records} usage "
            f"record(s), so course totals are unchanged."
        )
        if report.enrollments:
            self.stdout.write(f"Enrollments that {done} removed: {', '.join(report.enrollments)}.")
        self.stdout.write(
            "Slurm is not changed: remove their associations with sacctmgr (the association page lists them as "
            "left alone)." + (" Dry run: nothing was changed." if dry_run else "")
        )
