from django.db import models


class AssociationRun(models.Model):
    """One reconciliation of the course policies with Slurm's associations (clusterpolicy/associations.py).

    `changes` lists the differences found (portal desired vs `sacctmgr show`), each with the sacctmgr
    argv that fixes it; a dry run only lists them. The staff drift page reads the latest row.
    """

    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    trigger = models.CharField(max_length=32, help_text="command, enrollment, policy, periodic, ...")
    dry_run = models.BooleanField(default=False)
    courses = models.JSONField(default=list, help_text="Slurm accounts the run looked at.")
    changes = models.JSONField(default=list)
    unmanaged = models.JSONField(default=list, help_text="Associations in course accounts the portal leaves alone.")
    errors = models.JSONField(default=list)

    class Meta:
        ordering = ["-started_at", "-pk"]
        # The table it had as jobs.SlurmSyncRun: the move (migration 0001) changed no row.
        db_table = "jobs_slurmsyncrun"

    def __str__(self) -> str:
        return f"Association reconciliation {self.started_at:%Y-%m-%d %H:%M} ({len(self.changes)} changes)"
