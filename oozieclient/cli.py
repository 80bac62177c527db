"""`oozie <sub-command> <options>`: Oozie's command line (DG_CommandLineTool.md) over its Web Services API.

Options are Oozie's single-dash words (`-info`, `-config`, `-D name=value` or `-Dname=value`),
in any order. Exit codes are Oozie's: 0 on success, 255 (Java's -1) for any error, printed on
stderr as `Error: <code> : <message>`, and for options that make no command, printed as
`Invalid sub-command: ...` followed by the short help.

The server is `-oozie URL` or OOZIE_URL; the time zone `-timezone`, OOZIE_TIMEZONE or GMT;
authentication `-auth` or OOZIE_AUTH (SIMPLE, BASIC, TOKEN), else BASIC when a user name is
given (`-username`/`-password`, OOZIE_USER/OOZIE_PASSWORD), TOKEN when OOZIE_TOKEN is set,
else SIMPLE. `-debug` or OOZIE_DEBUG prints each request on stderr.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import NoReturn, TextIO

from oozieclient import __version__, commands
from oozieclient.configuration import UsageError, properties_and_headers
from oozieclient.http import AUTH_TYPES, Credentials, OozieClient, OozieClientError, stderr_debug
from oozieclient.properties import ConfigurationError

SHORT_HELP = "use 'help [sub-command]' for help details"  # CLIParser.shortHelp
ERROR_EXIT = 255  # OozieCLI.run returns -1; the shell sees 255
ENV_URL, ENV_AUTH, ENV_DEBUG = "OOZIE_URL", "OOZIE_AUTH", "OOZIE_DEBUG"
Command = Callable[[OozieClient, argparse.Namespace, Mapping[str, str], TextIO, TextIO], int]

# (option, takes a value, description): the usage `oozie help` prints, and the parser.
CONNECTION = [
    ("-oozie", True, "Oozie URL"),
    ("-auth", True, "select authentication type [SIMPLE|BASIC|TOKEN]"),
    ("-username", True, "username for BASIC authentication"),
    ("-password", True, "password for BASIC authentication"),
    ("-doas", True, "doAs user, impersonates as the specified user"),
    ("-insecure", False, "allow HTTPS connections whose certificate is not checked"),
    ("-debug", False, "print the Web Services API requests on stderr"),
]
TIMES = [
    ("-timezone", True, "use time zone with the specified ID (default GMT)"),
    ("-localtime", False, "use local time (same as passing your time zone to -timezone)"),
    ("-verbose", False, "verbose mode"),
]
JOB = [
    ("-action", True, "coordinator rerun/kill/log/ignore on action ids (1, 3-4, 7-40)"),
    ("-allruns", False, "Get workflow jobs corresponding to a coordinator action including all the reruns"),
    ("-auditlog", True, "job audit log"),
    ("-change", True, "change a coordinator or bundle job"),
    ("-config", True, "job configuration file '.xml' or '.properties'"),
    ("-configcontent", True, "job configuration"),
    ("-coordinator", True, "bundle rerun on coordinator names (requires -rerun)"),
    ("-date", True, "coordinator/bundle rerun on action dates (requires -rerun); coordinator kill and log on action dates"),
    ("-definition", True, "job definition"),
    ("-diff", True, "Show diff of the new coord definition and properties with the existing one (default true)"),
    ("-dryrun", False, "Dryrun a workflow, a coordinator or a bundle job without actually executing it"),
    ("-errorlog", True, "job error log"),
    ("-failed", False, "runs the failed workflow actions of the coordinator actions (requires -rerun)"),
    ("-filter", True, "<key><comparator><value>[;<key><comparator><value>]* (coordinator actions, requires -info)"),
    ("-ignore", True, "change status of a coordinator job or action to IGNORED (-action for actions)"),
    ("-info", True, "info of a job"),
    ("-interval", True, "polling interval in minutes (default is 5, requires -poll)"),
    ("-kill", True, "kill a job (coordinator can mention -action or -date)"),
    ("-len", True, "number of actions (default TOTAL ACTIONS, requires -info)"),
    ("-log", True, "job log"),
    ("-logfilter", True, "job log search parameter: recent, start, end, loglevel, text, limit"),
    ("-nocleanup", False, "do not clean up output-events of the coordinator rerun actions (requires -rerun)"),
    ("-offset", True, "job info offset of actions (default '1', requires -info)"),
    ("-order", True, "order to show coord actions (default ascending order, 'desc' for descending order)"),
    ("-poll", True, "poll Oozie until a job reaches a terminal state or a timeout occurs"),
    ("-refresh", False, "re-materialize the coordinator rerun actions (requires -rerun)"),
    ("-rerun", True, "rerun a job (coordinator requires -action or -date, bundle -coordinator or -date)"),
    ("-resume", True, "resume a job"),
    ("-run", False, "run a job"),
    ("-start", True, "start a job"),
    ("-submit", False, "submit a job"),
    ("-suspend", True, "suspend a job"),
    ("-timeout", True, "timeout in minutes (default is 30, negative values indicate no timeout, requires -poll)"),
    ("-update", True, "Update coord definition and properties"),
    ("-upload", False, "send the application on this machine's disk with -run, -submit or -dryrun (this service only)"),
    ("-value", True, "new endtime/concurrency/pausetime value for changing a coordinator job"),
]
JOBS = [
    ("-filter", True, "text=<*>;user=<U>;name=<N>;group=<G>;status=<S>;frequency=<F>;unit=<M>;"
                      "startcreatedtime=<SC>;endcreatedtime=<EC>;sortBy=<SB>"),
    ("-jobtype", True, "job type ('wf' (default), 'coordinator' or 'bundle')"),
    ("-kill", False, "bulk kill operation"),
    ("-len", True, "number of jobs (default '100')"),
    ("-offset", True, "jobs offset (default '1')"),
    ("-resume", False, "bulk resume operation"),
    ("-suspend", False, "bulk suspend operation"),
]
ADMIN = [
    ("-configuration", False, "show Oozie system configuration"),
    ("-queuedump", False, "show Oozie server queue elements"),
    ("-servers", False, "list available Oozie servers (more than one only if HA is enabled)"),
    ("-status", False, "show the current system status"),
    ("-timezones", False, "display a list of available time zones"),
    ("-version", False, "show Oozie server build version"),
]
INFO = [("-timezones", False, "display a list of available time zones")]
DEFINE = ("-D", "<property=value>", "set/override value for given property")
SUB_COMMANDS: dict[str, tuple[str, str, list[tuple[str, bool, str]], Command]] = {
    "job": ("<OPTIONS>", "job operations", [*CONNECTION, *TIMES, *JOB], commands.job),
    "jobs": ("<OPTIONS>", "jobs status", [*CONNECTION, *TIMES, *JOBS], commands.jobs),
    "admin": ("<OPTIONS>", "admin operations", [*CONNECTION, *ADMIN], commands.admin),
    "validate": ("<OPTIONS> <ARGS>", "validate a workflow, coordinator, bundle XML file", CONNECTION, commands.validate),
    "info": ("<OPTIONS>", "get more detailed info about specific topics", [*CONNECTION, *INFO], commands.info),
}


class _Parser(argparse.ArgumentParser):
    """argparse that reports instead of exiting: the message becomes `Invalid sub-command: ...`."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def usage(only: str = "") -> str:
    """`oozie help [sub-command]`: the commands and their options, laid out as Oozie's CLIParser prints them."""
    lines = [
        "usage:",
        f"      the env variable '{ENV_URL}' is used as default value for the '-oozie' option",
        "      the env variable 'OOZIE_TIMEZONE' is used as default value for the '-timezone' option",
        f"      the env variable '{ENV_AUTH}' is used as default value for the '-auth' option",
        "      custom headers for Oozie web services can be specified using '-Dheader:NAME=VALUE'",
        "",
        "      oozie help      : display usage",
        "",
        "      oozie version   : show client version",
        "",
    ]
    for name, (args, text, options, _) in SUB_COMMANDS.items():
        if only and name != only:
            continue
        lines.append(f"      oozie {name} {args} : {text}")
        entries = [(option + (" <arg>" if takes else ""), description) for option, takes, description in options]
        if name == "job":
            entries.append((f"{DEFINE[0]} {DEFINE[1]}", DEFINE[2]))
        for left, description in sorted(entries, key=lambda e: e[0].lower()):
            lines.append(f"                {left:<22}{description}")
        lines.append("")
    return "\n".join(lines)


def parser_for(name: str) -> argparse.ArgumentParser:
    """The parser of one sub-command, its options as Oozie spells them."""
    parser = _Parser(prog=f"oozie {name}", add_help=False, allow_abbrev=False)
    for option, takes, description in SUB_COMMANDS[name][2]:
        dest = option.lstrip("-")
        if takes:
            parser.add_argument(option, dest=dest, metavar="<arg>", help=description)
        else:
            parser.add_argument(option, dest=dest, action="store_true", help=description)
    parser.add_argument("-D", dest="defines", action="append", default=[], metavar="<property=value>",
                        help=DEFINE[2])
    if name == "validate":
        parser.add_argument("files", nargs="*")
    return parser


def credentials(options: argparse.Namespace, environ: Mapping[str, str], stdin: TextIO) -> Credentials:
    """The authentication -auth (or OOZIE_AUTH) names, or the one the given secrets imply (see the module docstring)."""
    username = options.username or environ.get("OOZIE_USER", "")
    password = options.password or environ.get("OOZIE_PASSWORD", "")
    token = environ.get("OOZIE_TOKEN", "")
    scheme = (options.auth or environ.get(ENV_AUTH, "")).strip().upper()
    if not scheme:
        scheme = "BASIC" if (options.username or password) else "TOKEN" if token else "SIMPLE"
    if scheme not in AUTH_TYPES:
        raise OozieClientError("E0000", f"authentication type {scheme} is not supported by this client: "
                                        f"use {', '.join(AUTH_TYPES)}")
    if scheme == "BASIC":
        if not username:
            raise OozieClientError("E0000", "BASIC authentication needs a user name: -username or OOZIE_USER")
        if not password:
            if not stdin.isatty():
                raise OozieClientError("E0000", "BASIC authentication needs a password: -password or OOZIE_PASSWORD")
            password = getpass.getpass(f"Oozie password for {username}: ")
        return Credentials("BASIC", username, password)
    if scheme == "TOKEN":
        if not token:
            raise OozieClientError("E0000", "TOKEN authentication needs the token in OOZIE_TOKEN")
        return Credentials("TOKEN", username, token)
    return Credentials("SIMPLE", username or getpass.getuser())


def main(
    argv: Sequence[str] | None = None, *, environ: Mapping[str, str] | None = None,
    stdout: TextIO | None = None, stderr: TextIO | None = None,
) -> int:
    """Run one `oozie` command line; the exit code (0, or 255 for any error)."""
    args = list(sys.argv[1:] if argv is None else argv)
    env = os.environ if environ is None else environ
    out = sys.stdout if stdout is None else stdout
    err = sys.stderr if stderr is None else stderr
    try:
        if not args:
            raise UsageError("Missing sub-command")
        name = args[0]
        if name == "help":
            print(usage(args[1] if len(args) > 1 else ""), file=out)
            return 0
        if name == "version":
            print(f"Oozie client build version: {__version__}", file=out)
            return 0
        if name not in SUB_COMMANDS:
            raise UsageError(f"Invalid sub-command [{name}]")
        options = parser_for(name).parse_args(args[1:])
        if name != "validate" and getattr(options, "files", None):
            raise UsageError(f"unexpected arguments: {' '.join(options.files)}")
        url = options.oozie or env.get(ENV_URL)
        if not url:
            raise OozieClientError("E0000", "Oozie URL is not available neither in command option or in the environment")
        _, headers = properties_and_headers(options.defines)
        client = OozieClient(
            url, credentials(options, env, sys.stdin), headers=headers, insecure=options.insecure,
            do_as=options.doas or "", debug=stderr_debug(options.debug or bool(env.get(ENV_DEBUG))),
        )
        return SUB_COMMANDS[name][3](client, options, env, out, err)
    except UsageError as exc:
        print(f"Invalid sub-command: {exc}", file=err)
        print("", file=err)
        print(SHORT_HELP, file=err)
        return ERROR_EXIT
    except OozieClientError as exc:
        print(f"Error: {exc}", file=err)
        if exc.hint:
            print(exc.hint, file=err)
        return ERROR_EXIT
    except (ConfigurationError, OSError) as exc:
        print(f"Error: {exc}", file=err)
        return ERROR_EXIT
    except KeyboardInterrupt:
        return ERROR_EXIT
