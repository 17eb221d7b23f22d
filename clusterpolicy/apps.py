from django.apps import AppConfig


class ClusterpolicyConfig(AppConfig):
    name = "clusterpolicy"
    verbose_name = "Course policy on the cluster"
