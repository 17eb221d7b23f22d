from django.urls import path

from reports import views

app_name = "reports"

urlpatterns = [
    path("", views.usage_overview_view, name="usage-overview"),
    path("course/<slug:slug>/", views.course_report_view, name="course-report"),
    path("course/<slug:slug>/usage.csv", views.course_report_csv, name="course-report-csv"),
    path("course/<slug:slug>/asked-and-used.csv", views.course_asked_and_used_csv, name="course-asked-used-csv"),
    path("course/<slug:slug>/statement/", views.course_statement, name="course-statement"),
    path("course/<slug:slug>/mine/", views.my_usage_view, name="my-usage"),
]
