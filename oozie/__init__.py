"""The Oozie language, pure: the EL (`oozie.el`) and definitions (`oozie.definitions`: safe XML, schemas, includes, configuration, coordinator XML).

No Django, no Celery, no clock, no database: every app may import it; it imports none of
them (checked by `make lint`, typed with `mypy --strict`).
"""
