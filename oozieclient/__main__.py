"""`python -m oozieclient ...`: the `oozie` command without its installed script."""

from __future__ import annotations

import sys

from oozieclient.cli import main

sys.exit(main())
