from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from portal.views import admin_login, password_reset_off

urlpatterns = [
    path("", include("ops.health")),  # /healthz and /readyz
    path("", include("ops.metrics")),  # /metrics (off unless a token or an allow-list is set)
    path("accounts/", include("allauth.urls")),
    # Reached only while local passwords are off: with them on, allauth's own reset page comes first.
    path("accounts/password/reset/", password_reset_off, name="password-reset-off"),
    path("admin/login/", admin_login, name="admin-login"),  # before the admin's own: SSO unless passwords are on
    path("admin/", admin.site.urls),
    # The staff drift page's old address (it was in jobs as the "Slurm policy sync").
    path("jobs/slurm-sync/", RedirectView.as_view(pattern_name="clusterpolicy:associations", permanent=True)),
    path("cluster/", include("clusterpolicy.urls")),
    path("reports/", include("reports.urls")),
    path("api/", include("api.urls")),  # /api/v1/ for scripts and the API tokens page (api/)
    path("lms/", include("lms.urls")),  # LTI 1.3: an LMS launches LabQueue (lms/)
    path("", include("courses.urls")),
    # /jobs/..., and the assignment pages (a job request's home), after courses: "assignments/new/" is theirs.
    path("", include("jobs.urls")),
]
