"""Operations staff: what the last reconciliation of course policies with Slurm found (drift)."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from jobs.models import SlurmSyncRun
from jobs.policy_sync import slurm_sync_last


@require_GET
@login_required
def slurm_sync_status(request: HttpRequest) -> HttpResponse:
    """No Slurm command runs here: the page shows the runs the worker and `sync_slurm` recorded."""
    if not request.user.is_staff:
        raise PermissionDenied("Only operations staff see the Slurm policy sync.")
    recent = SlurmSyncRun.objects.filter(finished_at__isnull=False)[:20]
    return render(request, "jobs/slurm_sync.html", {"last": slurm_sync_last(), "recent": recent})
