"""Write the course policies and rosters into Slurm's associations; `--dry-run` only prints the plan."""

from django.core.management.base import BaseCommand, CommandError

from clusterpolicy.associations import associations_reconcile
from slurm import SlurmError


class Command(BaseCommand):
    help = "Reconcile course policies and enrollments (portal) with Slurm associations (sacctmgr)."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="Print the sacctmgr changes; change nothing.")
        parser.add_argument("--course", action="append", metavar="SLUG", help="Only this course (repeatable).")

    def handle(self, *args, dry_run: bool, course: list[str] | None, **options) -> None:
        try:
            run = associations_reconcile(course_slugs=course, dry_run=dry_run, trigger="command")
        except SlurmError as error:
            raise CommandError(f"Slurm did not answer: {error}")
        self.stdout.write(f"Accounts: {', '.join(run.courses) or 'none'}")
        if not run.changes:
            self.stdout.write("Slurm matches the portal: nothing to change.")
        for change in run.changes:
            who = f"{change['account']}/{change['user']}" if change["user"] else change["account"]
            self.stdout.write(f"{'would run' if dry_run else 'ran'}: {change['command']}")
            self.stdout.write(f"    {who}: {'; '.join(change['differences'])}")
        for item in run.unmanaged:
            self.stdout.write(f"left alone: {item['account']}/{item['user']} ({item['why']})")
        for error in run.errors:
            self.stderr.write(f"error: {error}")
        if run.errors:
            raise CommandError(f"{len(run.errors)} change(s) failed.")
