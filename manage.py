#!/usr/bin/env python
"""Django's command-line entry point for the scheduler service."""

from __future__ import annotations

import os
import sys

from django.core.management import execute_from_command_line


def main() -> None:
    """Run a Django management command with this project's settings."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
