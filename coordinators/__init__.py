"""Coordinator jobs and actions: definitions, EL, commands, launchers, SLA."""
