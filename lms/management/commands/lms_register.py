"""Register an LMS (a platform) from the command line, e.g. from a deployment script; admin does the same."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from lms.services import registration_save


class Command(BaseCommand):
    help = "Create or update an LMS registration (keyed on issuer and client id) and switch its deployments on."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--name", required=True)
        parser.add_argument("--issuer", required=True, help="e.g. https://canvas.instructure.com")
        parser.add_argument("--client-id", required=True)
        parser.add_argument("--deployment-id", action="append", default=[], help="repeat for several")
        parser.add_argument("--keyset-url", required=True, help="the platform's JWKS URL")
        parser.add_argument("--auth-url", required=True, help="the platform's OIDC authorisation URL")
        parser.add_argument("--token-url", required=True, help="the platform's OAuth2 token URL")
        parser.add_argument("--identity-claim", required=True, help="claim with the netid, e.g. …/claim/custom#netid")

    def handle(self, *args, **options) -> None:
        try:
            registration = registration_save(
                name=options["name"],
                issuer=options["issuer"],
                client_id=options["client_id"],
                deployment_ids=options["deployment_id"],
                keyset_url=options["keyset_url"],
                auth_url=options["auth_url"],
                token_url=options["token_url"],
                identity_claim=options["identity_claim"],
            )
        except ValidationError as error:
            raise CommandError(error.messages[0]) from None
        self.stdout.write(f"Registration {registration.name} ({registration.uuid}) saved.")
