"""Login glue for django-allauth. Accounts are provisioned (seed, roster, SSO), never self-made."""

from allauth.account.adapter import DefaultAccountAdapter


class AccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request) -> bool:
        return False
