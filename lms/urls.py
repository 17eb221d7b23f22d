from django.urls import path
from lti_tool.views import jwks

from lms import views

app_name = "lms"

urlpatterns = [
    path("jwks.json", jwks, name="jwks"),
    path("login/", views.login_initiation, name="login-any"),
    path("login/<uuid:registration_uuid>/", views.login_initiation, name="login"),
    path("launch/", views.launch, name="launch"),
    path("link-course/", views.course_link, name="course-link"),
    path("deep-link/", views.deep_link, name="deep-link"),
    path("setup/", views.tool_setup, name="tool-setup"),
    path("courses/<slug:slug>/roster/", views.roster_sync, name="roster-sync"),
    path("courses/<slug:slug>/roster/schedule/", views.roster_schedule, name="roster-schedule"),
]
