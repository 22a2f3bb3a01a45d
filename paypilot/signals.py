"""Core signals: hooks through which apps lower in the import order extend core commands."""

from django.dispatch import Signal

# Sent by `manage.py demo_setup` after the demo tenant exists, with `stdout` (the command's
# output stream). Lets an app that ledger must not import (reconciliation) add its own
# demo data without ledger naming it.
demo_setup_done = Signal()
