"""`manage.py doctor [--user NETID]`: is this installation ready? Each check says OK, FAIL, WARN or SKIP, with
the fix; the exit status is 1 when any check fails (a warning does not). The checks are in ops/doctor.py."""

from django.core.management.base import BaseCommand

from ops.doctor import FAIL, WARN, doctor_run


class Command(BaseCommand):
    help = "Check the installation (database, broker, Slurm, munge, run-as, job files, static files, beat, ceilings)."
    requires_system_checks = []  # a broken database must be reported by its check, not stop the command

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--user",
            metavar="NETID",
            help="a student's cluster account: checks running commands as a student and reading a job directory",
        )

    def handle(self, *args, user: str | None = None, **options) -> None:
        results = doctor_run(user=user)
        for result in results:
            self.stdout.write(f"{result.status:<5} {result.name}: {result.detail}")
            if result.fix and result.status != "OK":
                self.stdout.write(f"      fix: {result.fix}")
        failed = [result.name for result in results if result.status == FAIL]
        if failed:
            self.stdout.write(f"doctor: {len(failed)} check(s) failed: {', '.join(failed)}")
            raise SystemExit(1)
        warned = [result.name for result in results if result.status == WARN]
        if warned:
            self.stdout.write(f"doctor: every check passed, with {len(warned)} warning(s): {', '.join(warned)}")
            return
        self.stdout.write("doctor: every check passed")
