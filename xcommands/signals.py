"""Signals of the command engine, for apps that keep work of their own in the database."""

from __future__ import annotations

from django.dispatch import Signal

#: Sent by the recovery sweep when Redis restarted empty or was flushed: every message it held
#: is gone. Keyword argument: `now`. The engine re-rings its own heads; receivers send again
#: whatever else they had queued there.
broker_lost_messages = Signal()
