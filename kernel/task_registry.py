"""The Celery task registry, read safely: CELERY_IMPORTS imported once per process, under a lock.

Celery fills `app.tasks` lazily (finalize, then the modules CELERY_IMPORTS names). Two threads
of a web process doing that at once (two gunicorn threads on the first keyed-job requests) hit
`RuntimeError: dictionary changed size during iteration`. Every reader that needs the whole
registry goes through `tasks(app)`: the first call loads it under a lock, later calls only read.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

_lock = threading.Lock()
_loaded: set[int] = set()  # id() of the apps whose registry is complete


def tasks(app: Any) -> Mapping[str, Any]:
    """The app's registered tasks, with every CELERY_IMPORTS module imported (once, thread-safely)."""
    if id(app) not in _loaded:
        with _lock:
            if id(app) not in _loaded:
                app.loader.import_default_modules()
                app.finalize(auto=True)
                _loaded.add(id(app))
    registry: Mapping[str, Any] = app.tasks
    return registry
