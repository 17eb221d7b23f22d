from django.urls import include, path, re_path
from django.views.decorators.http import require_POST

from jobs import file_views, gradebook, list_views, notification_views, resubmit_views, session_views, views

app_name = "jobs"

# Under /jobs/ (portal/urls.py includes this module at the site's root for the assignment page below).
job_patterns = [
    path("", list_views.job_list_view, name="job-list"),
    # The address the assignment page's form posted to before it posted to the page itself (a form opened
    # before an upgrade still arrives): the same view, POST only.
    path("submit/<slug:slug>/<slug:assignment_slug>/", require_POST(views.job_request), name="job-create"),
    path("course/<slug:slug>/", list_views.course_jobs, name="course-jobs"),
    path("course/<slug:slug>/jobs.csv", list_views.course_jobs_csv, name="course-jobs-csv"),
    path("course/<slug:slug>/failed/", list_views.course_failures, name="course-failures"),
    path("course/<slug:slug>/failed.csv", list_views.course_failures_csv, name="course-failures-csv"),
    path("course/<slug:slug>/gradebook/", gradebook.gradebook_index, name="gradebook-index"),
    path("course/<slug:slug>/gradebook/<slug:assignment_slug>/", gradebook.gradebook_detail, name="gradebook-detail"),
    path(
        "course/<slug:slug>/gradebook/<slug:assignment_slug>/grades.csv", gradebook.gradebook_csv, name="gradebook-csv"
    ),
    path(
        "course/<slug:slug>/gradebook/<slug:assignment_slug>/results.zip",
        gradebook.gradebook_results_zip,
        name="gradebook-results-zip",
    ),
    path("active/", list_views.active_jobs_part, name="active-jobs"),
    path("help/retries/", views.retry_help, name="retry-help"),
    path("notifications/", notification_views.notification_settings, name="notification-settings"),
    path(
        "notifications/address/<str:token>/",
        notification_views.notification_address_confirm,
        name="notification-address-confirm",
    ),
    path("<uuid:job_uuid>/", views.job_detail, name="job-detail"),
    path("<uuid:job_uuid>/status/", views.job_status, name="job-status"),
    path("<uuid:job_uuid>/cancel/", views.job_cancel_view, name="job-cancel"),
    path("<uuid:job_uuid>/retry/", views.job_retry_view, name="job-retry"),
    path("<uuid:job_uuid>/resubmit/", resubmit_views.job_resubmit_view, name="job-resubmit"),
    path("<uuid:job_uuid>/notes/", views.job_note_create, name="job-note-create"),
    path("<uuid:job_uuid>/review/", views.job_review_view, name="job-review"),
    path("<uuid:job_uuid>/log/<str:stream>/", views.job_log, name="job-log"),
    path("<uuid:job_uuid>/files/<path:path>", file_views.job_file, name="job-file"),
    path("<uuid:job_uuid>/view/<path:path>", file_views.job_file_view, name="job-file-view"),
    path("<uuid:job_uuid>/image/<path:path>", file_views.job_file_image, name="job-file-image"),
    path("<uuid:job_uuid>/download.zip", file_views.job_zip, name="job-zip"),
]

urlpatterns = [
    # A job request's one home: the assignment page shows the submission form and sends it (jobs.views).
    path("courses/<slug:slug>/assignments/<slug:assignment_slug>/", views.job_request, name="assignment-detail"),
    path("jobs/", include(job_patterns)),
    # Interactive sessions, reached through the nginx proxy (jobs.session_views): its auth check, its page for a
    # refused request, and what a browser that reaches the web server without the proxy gets under /interactive/.
    path("interactive/auth/", session_views.session_auth, name="session-auth"),
    path("interactive-closed/", session_views.session_closed, name="session-closed"),
    re_path(r"^interactive/(?P<path>.*)$", session_views.session_closed),
]
