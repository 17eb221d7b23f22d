"""The API tokens page (web side): the signed-in person makes a token (its text shown once), sees theirs and
revokes one. The API itself: api.endpoints."""

from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from api.forms import TokenForm
from api.problems import problem
from api.selectors import token_list
from api.services import TooManyTokens, token_create, token_revoke


@require_http_methods(["GET", "POST"])
@login_required
def token_settings(request: HttpRequest) -> HttpResponse:
    """GET the page; POST a new token, shown on the page this once (it is not stored, only its digest)."""
    form = TokenForm(request.POST or None, owner=request.user)
    shown = ""
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            _, shown = token_create(
                owner=request.user, name=data["name"], scopes=data["scopes"], course=data["course"], days=data["days"]
            )
        except TooManyTokens as refusal:
            form.add_error(None, str(refusal))  # the form keeps what was typed
        else:
            form = TokenForm(owner=request.user)
    context = {"form": form, "shown": shown, "tokens": token_list(owner=request.user)}
    status = 400 if request.method == "POST" and not shown else 200
    response = render(request, "api/token_settings.html", context, status=status)
    response["Cache-Control"] = "no-store"  # the page holding a token's text is not kept by the browser
    return response


@require_POST
@login_required
def token_revoke_view(request: HttpRequest, token_uuid: UUID) -> HttpResponse:
    if token_revoke(owner=request.user, token_uuid=token_uuid):
        messages.success(request, "Token revoked: scripts using it are refused from now on.")
    else:
        messages.error(request, "That token was already revoked, or it is not one of yours.")
    return redirect("api:token-settings")


def api_not_found(request: HttpRequest) -> HttpResponse:
    """An address under /api/v1/ that no operation has, answered as the API answers."""
    return problem(404, "There is nothing at this address. The API's addresses are listed at /api/v1/docs.")
