from django.urls import path

from courses import policy_views, term_views, views

app_name = "courses"

urlpatterns = [
    path("", views.course_list, name="course-list"),
    path("courses/<slug:slug>/", views.course_detail, name="course-detail"),
    path("courses/<slug:slug>/assignments/new/", views.assignment_edit, name="assignment-create"),
    path("courses/<slug:slug>/roster/", views.roster_import, name="roster-import"),
    path("courses/<slug:slug>/copy/", term_views.course_copy_view, name="course-copy"),
    path("courses/<slug:slug>/assignments/import/", term_views.assignment_import_view, name="assignment-import"),
    path(
        "courses/<slug:slug>/assignments/<slug:assignment_slug>/export.yaml",
        term_views.assignment_export_view,
        name="assignment-export",
    ),
    path("courses/<slug:slug>/hints/", views.hint_list, name="hint-list"),
    path("courses/<slug:slug>/policy/", policy_views.course_policy, name="course-policy"),
    path("courses/<slug:slug>/labs/", policy_views.lab_session_list_view, name="lab-list"),
    path(
        "courses/<slug:slug>/labs/<uuid:session_uuid>/cancel/",
        policy_views.lab_session_cancel_view,
        name="lab-cancel",
    ),
    path(
        "courses/<slug:slug>/labs/<uuid:session_uuid>/cancel-rest/",
        policy_views.lab_series_cancel_rest_view,
        name="lab-series-cancel-rest",
    ),
    path("courses/<slug:slug>/hints/<int:hint_id>/delete/", views.hint_delete, name="hint-delete"),
    path(
        "courses/<slug:slug>/assignments/<slug:assignment_slug>/edit/",
        views.assignment_edit,
        name="assignment-edit",
    ),
]
