from django.urls import path

from clusterpolicy import views

app_name = "clusterpolicy"

urlpatterns = [
    path("associations/", views.association_runs, name="associations"),
]
