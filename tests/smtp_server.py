"""A real SMTP server (aiosmtpd) on a free local port, and the portal's mail settings pointed at it."""

import email
import time
from email import policy
from email.message import EmailMessage

import pytest
from aiosmtpd.controller import Controller

from tests.service_account import free_port


class Mailbox:
    """An SMTP server's handler: keeps every message it is given."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's name)
        self.messages.append(email.message_from_bytes(envelope.content, policy=policy.default))
        return "250 Message accepted for delivery"

    def wait_for(self, count: int, timeout: float = 60) -> list[EmailMessage]:
        """Wait until `count` messages have arrived (polling, with a deadline); all of them."""
        deadline = time.monotonic() + timeout
        while len(self.messages) < count:
            assert time.monotonic() < deadline, f"{len(self.messages)} mail(s) arrived; waited for {count}"
            time.sleep(0.05)
        return list(self.messages)

    def to(self, address: str) -> list[EmailMessage]:
        return [message for message in self.messages if message["To"] == address]


@pytest.fixture
def smtp_server(settings):
    mailbox = Mailbox()
    controller = Controller(mailbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = controller.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.DEFAULT_FROM_EMAIL = "LabQueue <labqueue@cs.example.edu>"
    settings.LABQUEUE_SITE_URL = "https://labqueue.cs.example.edu"
    yield mailbox
    controller.stop()
