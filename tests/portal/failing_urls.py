"""The portal's URLs plus one page that fails on the server's side, for the 500 page test."""

from django.urls import include, path


def broken_page(request):
    raise RuntimeError("a fault on the server's side")


urlpatterns = [path("broken/", broken_page), path("", include("portal.urls"))]
