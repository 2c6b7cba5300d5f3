"""The same kind of test with Django's own test runner classes, no pytest fixtures."""

from __future__ import annotations

from django.core import mail
from django.test import TransactionTestCase

from anole_jobs.testing import assert_enqueued, drain, manual_mode
from signups.jobs import SendWelcome
from signups.services import register


class WelcomeEmailTests(TransactionTestCase):
    def setUp(self):
        self.jobs = self.enterContext(manual_mode())

    def test_a_signup_is_welcomed(self):
        signup, _ = register("eve@example.com")
        assert_enqueued(SendWelcome, args={"signup_id": signup.pk})
        self.assertEqual(drain(), {"completed": 1})
        self.assertEqual(mail.outbox[0].to, ["eve@example.com"])
