"""`manage.py up`: run the whole embedded service (Redis, web, worker, beat, Flower) in one go."""

from __future__ import annotations

import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from project.celery import QUEUE_NAMES
from project.flower_auth import AUTH_FILE_NAME, FlowerChild, flower_child
from project.launcher import (
    LauncherError,
    Supervisor,
    find_redis_server,
    free_port,
    install_stop_handlers,
    port_is_free,
    redis_answers,
    wait_for,
)


class Command(BaseCommand):
    """Start the embedded service and keep it running until Ctrl-C or SIGTERM."""

    help = (
        "Migrate, create the admin user on first run, start Redis (unless REDIS_URL is set), "
        "the web server, one Celery worker, celery beat and Flower (behind a login); restart any "
        "that dies; stop them all on Ctrl-C."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        """Ports and sizes; each also has an environment variable."""
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument(
            "--flower-port", type=int, default=int(os.environ.get("FLOWER_PORT", "5555"))
        )
        parser.add_argument(
            "--concurrency",
            type=int,
            default=int(os.environ.get("WORKER_CONCURRENCY", "2")),
            help="processes of the worker that runs actions' tasks (default 2)",
        )
        parser.add_argument("--no-flower", action="store_true", help="do not start Flower")

    def handle(self, *args: Any, **options: Any) -> None:
        """Bring everything up, print the URLs, restart what dies, and tear down on a signal."""
        try:
            self._run(options)
        except LauncherError as exc:
            raise CommandError(str(exc)) from exc

    def _say(self, message: str) -> None:
        self.stdout.write(f"[up] {message}")
        self.stdout.flush()

    def _run(self, options: dict[str, Any]) -> None:
        port: int = options["port"]
        flower_port: int = options["flower_port"]
        var_dir = Path(settings.VAR_DIR)
        var_dir.mkdir(parents=True, exist_ok=True)
        base_dir = Path(settings.BASE_DIR)
        for what, number in (("web", port), ("Flower", flower_port)):
            if not (what == "Flower" and options["no_flower"]) and not port_is_free(number):
                raise LauncherError(
                    f"port {number} for the {what} server is in use; "
                    f"set {'PORT' if what == 'web' else 'FLOWER_PORT'} to another port"
                )

        # Before anything starts: a Flower that would run without a login stops the launch here.
        flower = None if options["no_flower"] else self._flower(flower_port, var_dir)

        self._say("migrating the database")
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        self._ensure_admin()

        env = dict(os.environ)
        env.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
        env["PYTHONUNBUFFERED"] = "1"
        # Flower's credentials go to the Flower child alone (FlowerChild.env), not to every child.
        env.pop("FLOWER_BASIC_AUTH", None)
        supervisor = Supervisor(env=env, log=self._say, cwd=base_dir)
        install_stop_handlers(lambda: setattr(supervisor, "stopping", True))

        try:
            redis_url = self._start_redis(supervisor, var_dir)
            env["REDIS_URL"] = redis_url
            self._start_services(supervisor, options, var_dir, flower)
            self._print_urls(port, redis_url, flower)
            # A child that dies is started again (with backoff, see Supervisor.watch); only
            # Ctrl-C or SIGTERM ends the service.
            while not supervisor.stopping:
                supervisor.watch()
                time.sleep(0.5)
            self._say("stopping")
        finally:
            if supervisor.children:
                # A warm stop: running tasks finish and are acknowledged within the grace period.
                supervisor.stop_all(grace=float(os.environ.get("STOP_GRACE_SECONDS", "30")))

    def _ensure_admin(self) -> None:
        """On first run create user 'admin'; print its password once or take ADMIN_PASSWORD."""
        user_model = get_user_model()
        if user_model.objects.filter(is_superuser=True).exists():
            return
        password = os.environ.get("ADMIN_PASSWORD") or secrets.token_urlsafe(12)
        user_model.objects.create_superuser(
            username=os.environ.get("ADMIN_USERNAME", "admin"), email="", password=password
        )
        if os.environ.get("ADMIN_PASSWORD"):
            self._say("created admin user 'admin' with the password from ADMIN_PASSWORD")
        else:
            self._say(f"created admin user 'admin' with password: {password}")
            self._say("(shown only this once; change it in the admin)")

    def _flower(self, flower_port: int, var_dir: Path) -> FlowerChild:
        """How Flower will run and whom it lets in (docs/adr/0028); a generated password is shown once."""
        flower = flower_child(
            python=sys.executable,
            port=flower_port,
            var_dir=var_dir,
            address=os.environ.get("FLOWER_ADDRESS") or "127.0.0.1",
            basic_auth=os.environ.get("FLOWER_BASIC_AUTH"),
            oauth=os.environ.get("FLOWER_AUTH"),
            unauthenticated=os.environ.get("FLOWER_UNAUTHENTICATED"),
        )
        if flower.new_password is not None:
            self._say(f"created Flower login 'admin' with password: {flower.new_password}")
            self._say(f"(shown only this once; it is kept in {var_dir / AUTH_FILE_NAME}, mode 0600)")
        elif not flower.env:
            self._say("warning: Flower runs without a login (FLOWER_UNAUTHENTICATED=true)")
        return flower

    def _start_redis(self, supervisor: Supervisor, var_dir: Path) -> str:
        """Use REDIS_URL when set; otherwise start a local redis-server with files in ./var."""
        configured = os.environ.get("REDIS_URL")
        if configured:
            if not redis_answers(configured):
                raise LauncherError(f"REDIS_URL={configured} does not answer PING")
            self._say(f"using Redis at {configured}")
            return configured
        binary = find_redis_server()
        redis_port = int(os.environ.get("EMBEDDED_REDIS_PORT", "6379"))
        if not port_is_free(redis_port):
            redis_port = free_port()
        redis_dir = var_dir / "redis"
        redis_dir.mkdir(parents=True, exist_ok=True)
        supervisor.start(
            "redis",
            layer=0,
            argv=[
                binary,
                "--port", str(redis_port),
                "--bind", "127.0.0.1",
                "--dir", str(redis_dir),
                "--appendonly", "yes",
                "--save", "60 1000",
                "--daemonize", "no",
                "--logfile", str(redis_dir / "redis.log"),
            ],
        )
        url = f"redis://127.0.0.1:{redis_port}/0"
        wait_for(lambda: redis_answers(url), 15, "redis-server")
        return url

    def _start_services(
        self, supervisor: Supervisor, options: dict[str, Any], var_dir: Path, flower: FlowerChild | None
    ) -> None:
        """Web (gunicorn), a worker for commands and services and one for actions, beat, and Flower."""
        python = sys.executable
        bindir = Path(python).parent
        supervisor.start(
            "web",
            [
                str(bindir / "gunicorn"),
                "project.wsgi:application",
                "--bind", f"127.0.0.1:{options['port']}",
                "--workers", "2",
                "--threads", "4",
                "--access-logfile", "-",
                "--graceful-timeout", "10",
                "--no-control-socket",
            ],
            # The dashboard links to Flower where this launcher runs it (FLOWER_URL set by hand wins).
            env={} if flower is None or os.environ.get("FLOWER_URL") else {"FLOWER_URL": flower.url},
        )
        # Two pools: actions' tasks may run for hours and must never hold up the commands and
        # services that keep every job moving (and that notice a lost worker).
        for name, queues, concurrency in (
            ("worker", [q for q in QUEUE_NAMES if q != "actions"], 2),
            ("actions", ["actions"], options["concurrency"]),
        ):
            supervisor.start(
                name,
                [
                    python, "-m", "celery", "-A", "project", "worker",
                    "--loglevel", "INFO",
                    "--concurrency", str(concurrency),
                    "--queues", ",".join(queues),
                    "--hostname", f"{name}-{os.getpid()}@%h",
                ],
            )
        supervisor.start(
            "beat",
            [
                python, "-m", "celery", "-A", "project", "beat",
                "--loglevel", "INFO",
                "--schedule", str(var_dir / "celerybeat-schedule"),
                "--pidfile", "",
            ],
        )
        if flower is not None:
            supervisor.start("flower", flower.argv, env=flower.env)
        wait_for(lambda: not port_is_free(options["port"]), 30, "the web server")

    def _print_urls(self, port: int, redis_url: str, flower: FlowerChild | None) -> None:
        base = f"http://127.0.0.1:{port}"
        lines = [
            "the service is up:",
            f"  admin    {base}/admin/",
            f"  API      {base}/api/v1/   (docs {base}/api/docs/)",
            f"  health   {base}/healthz",
        ]
        if flower is not None:
            lines.append(f"  Flower   {flower.url}   (login: {flower.login})")
        lines.append(f"  Redis    {redis_url}")
        lines.append("press Ctrl-C to stop")
        for line in lines:
            self._say(line)
