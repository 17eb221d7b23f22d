from django.urls import path, re_path

from api import views
from api.endpoints import api

app_name = "api"

# Under /api/ (portal/urls.py).
urlpatterns = [
    path("tokens/", views.token_settings, name="token-settings"),
    path("tokens/<uuid:token_uuid>/revoke/", views.token_revoke_view, name="token-revoke"),
    path("v1/", api.urls),  # the API (api.endpoints), its schema at v1/openapi.json and docs at v1/docs
    # Anything else under v1/ (a file path with a line break matches no route): a problem document, not a page.
    re_path(r"^v1/", views.api_not_found),
]
