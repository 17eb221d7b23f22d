"""Start one test IdP: `python tests/idp/run.py oidc|saml PORT` (settings from the environment, see conftest)."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    kind, port = sys.argv[1], int(sys.argv[2])
    os.environ["DJANGO_SETTINGS_MODULE"] = f"{kind}_idp.settings"
    os.environ.setdefault("IDP_BASE_URL", f"http://127.0.0.1:{port}")
    import django
    from django.core.management import call_command
    from django.core.servers.basehttp import run
    from django.core.wsgi import get_wsgi_application

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    import directory
    from django.contrib.auth import get_user_model

    for username, data in directory.people().items():
        user, _ = get_user_model().objects.get_or_create(username=username)
        user.email, user.first_name, user.last_name = data.get("mail", ""), data.get("givenName", ""), data["sn"]
        user.set_password(data["password"])
        user.save()
    __import__(f"{kind}_idp.provision", fromlist=["register_portal"]).register_portal()
    run("127.0.0.1", port, get_wsgi_application(), threading=True)


if __name__ == "__main__":
    main()
