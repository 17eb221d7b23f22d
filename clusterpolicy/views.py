"""Operations staff: what the last reconciliation of course policies with Slurm found (drift)."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from clusterpolicy.selectors import association_run_last, association_run_list


@require_GET
@login_required
def association_runs(request: HttpRequest) -> HttpResponse:
    """No Slurm command runs here: the page shows the runs the worker and `reconcile_associations` recorded."""
    if not request.user.is_staff:
        raise PermissionDenied("Only operations staff see the reconciliation of course policies with Slurm.")
    context = {"last": association_run_last(), "recent": association_run_list(limit=20)}
    return render(request, "clusterpolicy/association_runs.html", context)
