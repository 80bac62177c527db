"""`manage.py chaos`: run coordinators and keyed jobs while killing workers, Redis and PostgreSQL.

Everything runs on loopback in a temporary directory: a private PostgreSQL cluster and Redis,
Celery workers and beat. Faults are injected the way production meets them (SIGKILL of pool
processes and whole workers, SIGSTOP past the lease, Redis flushed and restarted empty,
PostgreSQL restarted), then the run waits until everything settled and counts what went wrong.
"""
