"""Two real identity providers on 127.0.0.1 for the SSO tests, and a browser-like login helper.

The session starts the portal (pytest-django's live_server), then an OIDC IdP (django-allauth's
allauth.idp.oidc) and a SAML IdP (djangosaml2idp2 with xmlsec1), each a subprocess running a tiny
Django project from tests/idp/ on a free port, and stops them at the end. Logins go over real HTTP
with `requests`, following redirects and posting the forms as a browser would: no mocks.
"""

from __future__ import annotations

import datetime
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin

import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from django.test import override_settings

from portal.sso import socialaccount_providers

IDP_DIR = Path(__file__).resolve().parents[2] / "idp"
OIDC_ID = "campus-oidc"
SAML_ID = "campus-saml"
OIDC_CLIENT_ID = "labqueue-portal"
OIDC_CLIENT_SECRET = "test-only-oidc-secret"

#: The IdPs' people. Tests change attributes (not the set of people) with `write_directory`.
PEOPLE = {
    "student4": {
        "eppn": "student4@example.edu",
        "mail": "student4@example.edu",
        "givenName": "Pat",
        "sn": "Four",
        "affiliation": ["student", "member"],
        "groups": ["urn:example.edu:cs101:students"],
    },
    "ta1": {
        "eppn": "ta1@example.edu",
        "mail": "ta1@example.edu",
        "givenName": "Tomas",
        "sn": "Assistant",
        "affiliation": ["student", "member"],
        "groups": ["urn:example.edu:cs101:tas"],
    },
    "opsadmin": {
        "eppn": "instructor1@example.edu",
        "mail": "ada@example.edu",
        "givenName": "Ada",
        "sn": "Ops",
        "affiliation": ["staff", "member"],
        "groups": [],
    },
    "visitor": {
        "eppn": "visitor@elsewhere.org",
        "mail": "visitor@elsewhere.org",
        "givenName": "Vic",
        "sn": "Visitor",
        "affiliation": ["member"],
        "groups": ["urn:example.edu:cs101:students"],
    },
    "nocluster": {
        "eppn": "nocluster@example.edu",
        "mail": "nocluster@example.edu",
        "givenName": "Nora",
        "sn": "Nobody",
        "affiliation": ["student"],
        "groups": [],
    },
    "badname": {
        "eppn": "Bad.Name+x@example.edu",
        "mail": "bad@example.edu",
        "givenName": "Bad",
        "sn": "Name",
        "affiliation": ["student"],
        "groups": [],
    },
}
for _username, _person in PEOPLE.items():
    _person["password"] = f"pw-{_username}"

GROUP_ROLES = {
    "urn:example.edu:cs101:students": "cs101:student",
    "urn:example.edu:cs101:tas": "cs101:ta",
}
#: What both test IdPs are trusted for ("trusted_for" in their entries): they are the campus's own.
CAMPUS_TRUST = ("staff", "course_roles")


@dataclass
class IdP:
    kind: str  # "oidc" or "saml"
    url: str
    login_path: str  # the portal's address that starts a login through this IdP


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _key_and_cert(folder: Path, name: str) -> tuple[Path, Path]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .sign(key, hashes.SHA256())
    )
    key_file, cert_file = folder / f"{name}.key", folder / f"{name}.crt"
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key_file, cert_file


def write_directory(path: Path, people: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(people))
    tmp.replace(path)  # the IdPs read it on every login: never let them see half a file


def _start(kind: str, port: int, env: dict[str, str], log: Path) -> subprocess.Popen:
    handle = log.open("wb")
    process = subprocess.Popen(
        [sys.executable, str(IDP_DIR / "run.py"), kind, str(port)],
        env={**os.environ, **env},
        stdout=handle,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    probe = "/.well-known/openid-configuration" if kind == "oidc" else "/idp/metadata/"
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the {kind} IdP exited ({process.returncode}):\n{log.read_text()[-4000:]}")
        try:
            if requests.get(url + probe, timeout=2).status_code == 200:
                return process
        except requests.ConnectionError:
            pass
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"the {kind} IdP did not answer in 60 s:\n{log.read_text()[-4000:]}")
        time.sleep(0.2)


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@dataclass
class IdPs:
    oidc: IdP
    saml: IdP
    directory: Path
    providers: dict
    saml_cert: str


def portal_providers(
    oidc_url: str,
    saml_url: str,
    saml_cert: str,
    scopes: tuple[str, ...] = ("example.edu",),
    *,
    saml_trusted_for: tuple[str, ...] = CAMPUS_TRUST,
    oidc_trusted_for: tuple[str, ...] = CAMPUS_TRUST,
) -> dict:
    """allauth's providers for the two test IdPs, from LABQUEUE_SAML_IDPS / LABQUEUE_OIDC_PROVIDERS-style entries."""
    return socialaccount_providers(
        saml=[
            {
                "id": SAML_ID,
                "name": "Example University (SAML)",
                "entity_id": f"{saml_url}/idp/metadata/",
                "sso_url": f"{saml_url}/idp/sso/redirect/",
                "slo_url": f"{saml_url}/idp/slo/redirect/",
                "x509cert": saml_cert,
                "netid_scopes": list(scopes),
                "trusted_for": list(saml_trusted_for),
            }
        ],
        oidc=[
            {
                "id": OIDC_ID,
                "name": "Example University (OIDC)",
                "server_url": oidc_url,
                "client_id": OIDC_CLIENT_ID,
                "secret": OIDC_CLIENT_SECRET,
                "uid_field": "sub",
                "netid_scopes": list(scopes),
                "trusted_for": list(oidc_trusted_for),
            }
        ],
        netid_claim="eppn",
    )


@pytest.fixture(scope="session")
def idps(django_db_setup, live_server, tmp_path_factory, django_db_blocker) -> Iterator[IdPs]:
    folder = tmp_path_factory.mktemp("idps")
    directory = folder / "people.json"
    write_directory(directory, PEOPLE)
    oidc_port, saml_port = _free_port(), _free_port()
    oidc_url, saml_url = f"http://127.0.0.1:{oidc_port}", f"http://127.0.0.1:{saml_port}"
    oidc_key, _ = _key_and_cert(folder, "oidc")
    saml_key, saml_cert_file = _key_and_cert(folder, "saml")
    saml_cert = "".join(saml_cert_file.read_text().strip().splitlines()[1:-1])
    providers = portal_providers(oidc_url, saml_url, saml_cert)

    # The SAML IdP trusts the portal through the portal's own SP metadata, fetched over HTTP.
    sp_metadata = f"{live_server.url}/accounts/saml/{SAML_ID}/metadata/"
    with override_settings(SOCIALACCOUNT_PROVIDERS=providers), django_db_blocker.unblock():
        response = requests.get(sp_metadata, timeout=10)
    response.raise_for_status()
    (folder / "sp.xml").write_bytes(response.content)

    common = {"IDP_DIRECTORY": str(directory), "PYTHONDONTWRITEBYTECODE": "1"}
    oidc = _start(
        "oidc",
        oidc_port,
        {
            **common,
            "IDP_DATABASE": str(folder / "oidc.sqlite3"),
            "IDP_OIDC_PRIVATE_KEY_FILE": str(oidc_key),
            "IDP_OIDC_CLIENT_ID": OIDC_CLIENT_ID,
            "IDP_OIDC_CLIENT_SECRET": OIDC_CLIENT_SECRET,
            "IDP_OIDC_REDIRECT_URIS": f"{live_server.url}/accounts/oidc/{OIDC_ID}/login/callback/",
        },
        folder / "oidc.log",
    )
    try:
        saml = _start(
            "saml",
            saml_port,
            {
                **common,
                "IDP_DATABASE": str(folder / "saml.sqlite3"),
                "IDP_SAML_KEY_FILE": str(saml_key),
                "IDP_SAML_CERT_FILE": str(saml_cert_file),
                "IDP_SAML_SP_METADATA_FILE": str(folder / "sp.xml"),
                "IDP_SAML_SP_ENTITY_ID": sp_metadata,
            },
            folder / "saml.log",
        )
    except Exception:
        _stop(oidc)
        raise
    try:
        yield IdPs(
            oidc=IdP("oidc", oidc_url, f"/accounts/oidc/{OIDC_ID}/login/"),
            saml=IdP("saml", saml_url, f"/accounts/saml/{SAML_ID}/login/"),
            directory=directory,
            providers=providers,
            saml_cert=saml_cert,
        )
    finally:
        _stop(saml)
        _stop(oidc)


@pytest.fixture
def sso(idps, settings):
    """The portal configured for both IdPs, with the campus rules the tests expect; people reset."""
    write_directory(idps.directory, PEOPLE)
    settings.SOCIALACCOUNT_PROVIDERS = idps.providers
    settings.LABQUEUE_NETID_ATTRIBUTE = "eppn"
    settings.LABQUEUE_NETID_PATTERN = r"^([^@]+)@example\.edu$"
    settings.LABQUEUE_ACCOUNT_CHECK = "getent"
    settings.LABQUEUE_STAFF_AFFILIATIONS = ["staff"]
    settings.LABQUEUE_STAFF_GROUPS = []
    settings.LABQUEUE_GROUP_ROLES = GROUP_ROLES
    return idps


@pytest.fixture(params=["oidc", "saml"])
def idp(request, sso) -> IdP:
    return getattr(sso, request.param)


def set_person(idps: IdPs, username: str, **changes) -> None:
    people = json.loads(idps.directory.read_text())
    people[username].update(changes)
    write_directory(idps.directory, people)


class _Forms(HTMLParser):
    """The forms of a page: action, method and their input values."""

    def __init__(self):
        super().__init__()
        self.forms: list[dict] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.forms.append({"action": attrs.get("action") or "", "method": attrs.get("method", "get"), "data": {}})
        elif tag in ("input", "button") and self.forms and attrs.get("name"):
            if attrs.get("type") != "submit" or tag == "input":
                self.forms[-1]["data"].setdefault(attrs["name"], attrs.get("value") or "")


def forms(response: requests.Response) -> list[dict]:
    parser = _Forms()
    parser.feed(response.text)
    for form in parser.forms:
        form["action"] = urljoin(response.url, form["action"])
    return parser.forms


def form_with(response: requests.Response, field: str) -> dict:
    for form in forms(response):
        if field in form["data"]:
            return form
    raise AssertionError(f"no form with {field!r} at {response.url} ({response.status_code}):\n{response.text[:2000]}")


def post_form(browser: requests.Session, response: requests.Response, field: str, **values) -> requests.Response:
    form = form_with(response, field)
    return browser.post(form["action"], data={**form["data"], **values}, timeout=30)


def sso_login(portal_url: str, idp: IdP, username: str, browser: requests.Session | None = None) -> requests.Response:
    """Sign in to the portal through `idp` as a browser would; returns the last response."""
    browser = browser or requests.Session()
    login_page = browser.get(f"{portal_url}/accounts/login/", timeout=30)
    assert login_page.status_code == 200
    # The campus button: a POST form (with CSRF) to the provider's login address.
    button = next(form for form in forms(login_page) if idp.login_path in form["action"])
    at_idp = browser.post(button["action"], data=button["data"], timeout=30)
    assert at_idp.url.startswith(idp.url), f"not sent to the IdP: {at_idp.url}\n{at_idp.text[:2000]}"
    field = "login" if idp.kind == "oidc" else "username"
    response = post_form(browser, at_idp, "password", **{field: username, "password": PEOPLE[username]["password"]})
    if idp.kind == "saml":
        # The IdP answers with a self-submitting form that posts the signed assertion to the portal.
        response = post_form(browser, response, "SAMLResponse")
    return response
