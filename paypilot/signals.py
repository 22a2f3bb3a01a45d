"""Core signals: hooks through which apps extend core commands without being named by them."""

from django.dispatch import Signal

# Sent by `manage.py demo_setup` after the demo tenant and its story exist, with `stdout`
# (the command's output stream). The reconciliation app loads its sample workspace into
# the separate `sample` tenant from here, so demo_setup needs no knowledge of it.
demo_setup_done = Signal()
