"""A real LTI 1.3 platform (an LMS's side of the protocol) for the tests, on lti1p3platform.

It builds the OIDC login initiation, answers the tool's authentication request with a signed id_token (checking
the redirect_uri against its own allow-list, which lti1p3platform 0.1.8 does not) and checks the tool's signed
deep-linking response. Its key set is served over loopback HTTP by a small server thread, which the portal
fetches as it would a real LMS's.
"""

from __future__ import annotations

import html
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from lti1p3platform.exceptions import LtiServiceException
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.membership import Context
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request
from lti1p3platform.score import UpdateScoreStatus
from lti1p3platform.service_connector import AssignmentsGradesService, NamesRoleProvisioningService

ISSUER = "https://lms.example.edu"
CLIENT_ID = "labqueue-client"
DEPLOYMENT_ID = "deployment-1"
NETID_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/custom#netid"
ROLE = "http://purl.imsglobal.org/vocab/lis/v2/membership#{}"


def _private_key_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def _public_key_pem(private_pem: str) -> str:
    key = serialization.load_pem_private_key(private_pem.encode(), password=None)
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


class _Config(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, **kwargs) -> None:
        self._registration = kwargs["registration"]

    def get_registration_by_params(self, **kwargs) -> Registration:
        return self._registration


class _ParamsRequest(Request):
    def build_metadata(self, request: dict) -> dict:
        return {
            "method": "GET",
            "get_data": request,
            "form_data": {},
            "headers": {},
            "content_type": None,
            "path": "/auth",
            "json": None,
        }


class _HttpRequest(Request):
    def build_metadata(self, handler: BaseHTTPRequestHandler) -> dict:
        parts = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        return {
            "method": handler.command,
            "get_data": dict(parse_qsl(parts.query)),
            "form_data": {},
            "headers": dict(handler.headers),
            "content_type": handler.headers.get("Content-Type"),
            "path": parts.path,
            "json": json.loads(body) if body and "json" in handler.headers.get("Content-Type", "") else None,
        }


class _Grades(AssignmentsGradesService):
    """The platform's gradebook: line items and the scores posted into them (Platform.line_items, .scores)."""

    platform: Platform

    def find_lineitems(self, page=1, limit=None, line_item_id=None, resource_link_id=None, resource_id=None, tag=None):
        items = [item for item in self.platform.line_items if resource_id in (None, item.get("resourceId"))]
        return {"content": items, "has_next": False, "next": None}

    def find_lineitem(self, line_item_id: str) -> dict:
        return next(item for item in self.platform.line_items if item["id"].endswith(f"/{line_item_id}"))

    def create_lineitem(self, creation_data: dict) -> dict:
        item = {**creation_data, "id": f"{self.platform.base}/lineitems/{len(self.platform.line_items) + 1}"}
        self.platform.line_items.append(item)
        return item

    def update_lineitem(self, update_data):
        raise NotImplementedError

    def delete_lineitem(self, line_item_id):
        raise NotImplementedError

    def get_results(self, line_item_id, page=1, limit=None, user_id=None):
        raise NotImplementedError

    def update_score(self, line_item_id: str, score: dict) -> UpdateScoreStatus:
        self.platform.scores.append({"line_item": line_item_id, **score})
        return UpdateScoreStatus.SUCCESS


class _Members(NamesRoleProvisioningService):
    members: list[dict] = []

    def get_member_data_page(self, **query) -> dict:
        return {"content": [dict(member) for member in self.members], "has_next": False, "next": None}

    def get_context_by_id(self) -> Context:
        return Context(id="lms-course-1", label="LMS 1", title="Course lms-course-1")

    def is_resource_link_valid(self, context_id: str, resource_link_id: str) -> bool:
        return True


class _Launch(LTIAdvantageMessageLaunchAbstract):
    def render_launch_form(self, launch_data: dict, **kwargs) -> dict:
        return launch_data


class _Login(OIDCLoginAbstract):
    def set_lti_message_hint(self, **kwargs) -> None:
        self._lti_message_hint = kwargs["hint"]

    def get_redirect(self, url: str) -> str:
        return url


class Platform:
    """One LMS with one registration of the portal (at `portal_base`), and its JWKS served on 127.0.0.1."""

    def __init__(self, portal_base: str = "http://testserver") -> None:
        self.private_key = _private_key_pem()
        self.registration = (
            Registration()
            .set_iss(ISSUER)
            .set_client_id(CLIENT_ID)
            .set_deployment_id(DEPLOYMENT_ID)
            .set_oidc_login_url(f"{portal_base}/lms/login/")
            .set_launch_url(f"{portal_base}/lms/launch/")
            .set_deeplink_launch_url(f"{portal_base}/lms/launch/")
            .set_platform_private_key(self.private_key)
            .set_platform_public_key(_public_key_pem(self.private_key))
        )
        self.allowed_redirects = {f"{portal_base}/lms/launch/"}
        self.members: list[dict] = []  # the course's members, as NRPS gives them
        self.requests: list[str] = []
        self.line_items: list[dict] = []  # the LMS gradebook's columns, and the scores posted into them
        self.scores: list[dict] = []
        self.next_launch: dict = {}  # what the platform's /auth page puts in its next launch (authenticate's keywords)
        self.scores_refused = 0  # answer this many score posts with 503 (an LMS having a bad minute)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _handler(self):
        platform = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, status: int, body: object) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(json.dumps(body).encode())

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                if self.path == "/jwks":
                    return self._answer(200, {"keys": platform.registration.get_jwks()})
                if self.path.startswith("/auth?"):
                    return self._launch_form()
                if self.path.startswith("/lineitems"):
                    return self._serve(platform.grades(self).handle_get_lineitems)
                if not self.path.startswith("/memberships"):
                    return self._answer(404, {})
                service = _Members(_HttpRequest(self), _Config(registration=platform.registration), platform.nrps_url)
                service.members = platform.members
                try:
                    response = service.handle_get_members()
                except LtiServiceException as error:
                    return self._answer(error.status_code, {"error": str(error)})
                platform.requests.append(self.path)
                self._answer(response.code, response.result)

            def _launch_form(self) -> None:
                """The platform's answer to the tool's authentication request in a browser: a form that posts
                the id_token to the tool (the LMS's page; its script is the LMS's, not the portal's)."""
                redirect_uri, form = platform.authenticate(f"{platform.base}{self.path}", **platform.next_launch)
                fields = "".join(f'<input type="hidden" name="{k}" value="{html.escape(v)}">' for k, v in form.items())
                page = (
                    f'<form method="post" action="{html.escape(redirect_uri)}">{fields}'
                    '<button type="submit">Continue to the tool</button></form>'
                    "<script>document.forms[0].submit()</script>"
                )
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.end_headers()
                self.wfile.write(page.encode())

            def _serve(self, handle, *args) -> None:
                try:
                    response = handle(*args)
                except LtiServiceException as error:
                    return self._answer(error.status_code, {"error": str(error)})
                result = response.result
                # A page of results is sent as its content alone (lti1p3platform's own framework glue does so).
                self._answer(
                    response.code, result["content"] if isinstance(result, dict) and "content" in result else result
                )

            def do_POST(self) -> None:  # noqa: N802
                if self.path == "/lineitems":
                    return self._serve(platform.grades(self).handle_create_lineitem)
                if self.path.startswith("/lineitems/") and self.path.endswith("/scores"):
                    if platform.scores_refused:
                        platform.scores_refused -= 1
                        return self._answer(503, {"error": "The gradebook is busy"})
                    line_item_id = self.path.split("/")[2]
                    return self._serve(platform.grades(self).handle_update_score, line_item_id)
                form = dict(parse_qsl(self.rfile.read(int(self.headers["Content-Length"])).decode()))
                if self.path != "/token":
                    return self._answer(404, {})
                self._answer(200, _Config(registration=platform.registration).get_access_token(form))

            def log_message(self, *args) -> None:
                pass

        return Handler

    def __enter__(self) -> Platform:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def grades(self, handler: BaseHTTPRequestHandler) -> _Grades:
        service = _Grades(_HttpRequest(handler), _Config(registration=self.registration), f"{self.base}/lineitems")
        service.platform = self
        return service

    @property
    def nrps_url(self) -> str:
        return f"{self.base}/memberships"

    def trust_tool(self, tool_jwks: dict) -> None:
        """The tool's public keys, as an LMS administrator pastes them or the platform fetches them."""
        self.registration.set_tool_key_set(tool_jwks)

    def login_initiation_url(self, login_hint: str) -> str:
        login = _Login(None, _Config(registration=self.registration))
        login.set_lti_message_hint(hint=uuid.uuid4().hex)
        return login.initiate_login(login_hint)

    def authenticate(
        self,
        auth_request_url: str,
        *,
        netid: str | None,
        roles: list[str],
        context_id: str = "lms-course-1",
        custom: dict | None = None,
        deep_linking: bool = False,
        expires_in: int = 300,
        **claims,
    ) -> tuple[str, dict]:
        """Answer the tool's authentication request: (the tool's redirect_uri, the form it is posted)."""
        params = dict(parse_qsl(urlsplit(auth_request_url).query))
        assert params["redirect_uri"] in self.allowed_redirects, params["redirect_uri"]
        launch = _Launch(_ParamsRequest(params), _Config(registration=self.registration))
        launch.set_user_data(params["login_hint"], [ROLE.format(role) for role in roles], full_name="A Person")
        launch.set_launch_context_claim(context_id, context_title=f"Course {context_id}")
        if not deep_linking:
            launch.set_resource_link_claim(f"link-{uuid.uuid4().hex[:8]}", title="Lab")
        custom = dict(custom or {})
        if netid is not None:
            custom["netid"] = netid
        launch.set_custom_parameters_claim(custom)
        if deep_linking:
            launch.set_dl(f"{self.base}/deep-link-return", title="Add", accept_types={"ltiResourceLink"})
        launch.set_nrps(self.nrps_url)
        launch.set_ags(f"{self.base}/lineitems", allow_creating_lineitems=True)
        launch.set_extra_claims(claims)
        launch.set_id_token_expiration(expires_in)
        form = launch.lti_launch()
        return form.pop("launch_url"), form

    def deep_link_items(self, jwt: str, tool_jwks: dict) -> list[dict]:
        """The content items of the tool's signed deep-linking response (its signature checked)."""
        self.trust_tool(tool_jwks)
        return _Config(registration=self.registration).validate_deeplinking_resp({"JWT": jwt})


def resigned(platform: Platform, id_token: str, **changes) -> str:
    """The same id_token with `changes` made, signed again with the platform's real key."""
    import jwt

    body = jwt.decode(id_token, options={"verify_signature": False})
    body.update(changes)
    return jwt.encode(body, platform.private_key, algorithm="RS256", headers={"kid": platform.registration.get_kid()})


def tampered(id_token: str, **changes) -> str:
    """The same id_token with `changes` made to its body and its signature left as it was."""
    import base64

    header, body, signature = id_token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    claims.update(changes)
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{header}.{body}.{signature}"
