"""Secret job properties: which names are secret, and their values masked for readers who may not see them.

A coordinator's, bundle's or workflow's configuration (job.properties, `-D`, the API's
configuration) often carries credentials: `db.password`, `api.token`. Reads are open to every
authenticated user by default (COORD_RESTRICT_READS=false), so every interface that shows a
job's configuration, or text derived from it, to someone other than its owner or a job admin
shows it through a `Masker`:

- a property is secret when its name matches a pattern of SECRET_PROPERTY_PATTERNS (glob,
  case-insensitive; default `*password*,*secret*,*token*,*.key`): its value is shown as `MASK`,
  whatever it is (even empty: a reader does not learn that none is set);
- free text (a resolved action configuration, a definition XML, an error message, a log line)
  often holds a secret value under another name (`jdbc.url=...${db.password}...`): each
  secret value of at least MIN_SECRET_CHARS characters is replaced wherever it occurs (also
  XML-escaped or percent-encoded), and so are values written next to a secret name
  (`<name>x.password</name><value>...</value>`, `api.token=...`, `"api.token": "..."`).
  Shorter values are only masked under their name: replacing `ab` everywhere would garble the
  text and tell what the value is.

Nothing stored changes: masking is for display. The owner and job admins (superusers and
holders of JOB_ADMIN_PERMISSION, as kernel.permissions.is_admin) see the real values;
they need them to rerun and edit. Log lines are read by operators, not owners: they are
masked always. Limits (SECURITY.md): values are stored in clear in the database; a secret
shorter than MIN_SECRET_CHARS, or transformed (base64, split), under a name that is not
secret is not recognized in free text.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import quote
from xml.sax.saxutils import escape

from django.conf import settings

MASK = "********"
#: Secret values shorter than this are masked under their own name only, not searched for in text.
MIN_SECRET_CHARS = 4
DEFAULT_PATTERNS = ("*password*", "*secret*", "*token*", "*.key")
#: Job admins' permission (kernel.permissions.ADMIN_PERMISSION), named here as a string:
#: the kernel imports no domain app.
JOB_ADMIN_PERMISSION = "coordinators.change_coordinatorjob"

# `name=value` at the start of a line (a .properties line, action data): the value runs to the end of the line.
_LINE_PAIR = re.compile(r"^([ \t]*)([\w.\-]+)([ \t]*[=:][ \t]*)([^\n]*)$", re.MULTILINE)
# `name=value` inside text (a URL query, a log line): the value ends at a space or a separator.
_INLINE_PAIR = re.compile(r"(?<![\w.\-])([A-Za-z_][\w.\-]*)(=)(\$\{[^}]*\}|[^\s&;,'\"<>()\[\]{}]*)")
# Hadoop XML: <name>n</name><value>v</value> (values are XML-escaped, so they hold no '<').
_XML_PAIR = re.compile(r"(<name>\s*)([^<]*?)(\s*</name>\s*<value>)([^<]*)(</value>)")
# JSON or a Python repr: "n": "v" or 'n': 'v'.
_QUOTED_PAIR = re.compile(r"""(["'])([^"'\n]{1,255})\1(\s*:\s*)(["'])((?:\\.|(?!\4).)*)\4""")


def patterns() -> tuple[str, ...]:
    """SECRET_PROPERTY_PATTERNS, lower case (read on each call: tests and reloads may change the setting)."""
    return _normalized(tuple(settings.SECRET_PROPERTY_PATTERNS))


@lru_cache(maxsize=8)
def _normalized(configured: tuple[str, ...]) -> tuple[str, ...]:
    """The patterns stripped and in lower case, blanks dropped."""
    return tuple(str(pattern).strip().lower() for pattern in configured if str(pattern).strip())


@lru_cache(maxsize=8)
def _matcher(globs: tuple[str, ...]) -> re.Pattern[str] | None:
    """One regular expression for all the patterns (None: nothing is secret)."""
    if not globs:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(glob)})" for glob in globs))


@lru_cache(maxsize=4096)
def _is_secret(name: str, globs: tuple[str, ...]) -> bool:
    """Whether the name, in lower case, matches one of the (lower-case) globs."""
    matcher = _matcher(globs)
    return matcher is not None and matcher.match(name.strip().lower()) is not None


def is_secret(name: object) -> bool:
    """Whether a property of this name holds a secret (SECRET_PROPERTY_PATTERNS, case-insensitive)."""
    return isinstance(name, str) and _is_secret(name, patterns())


def secret_values(*sources: Any) -> tuple[str, ...]:
    """The values of secret properties in mappings (nested ones too), long enough to search for; longest first."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            for name, item in value.items():
                if is_secret(name) and isinstance(item, str | int | float) and not isinstance(item, bool):
                    found.add(str(item))
                else:
                    walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    for source in sources:
        walk(source)
    return tuple(sorted((value for value in found if len(value) >= MIN_SECRET_CHARS), key=lambda v: (-len(v), v)))


@lru_cache(maxsize=256)
def _value_pattern(values: tuple[str, ...]) -> re.Pattern[str] | None:
    """The values and their XML-escaped and percent-encoded forms, longest first (so none is cut by a shorter one)."""
    forms = {form for value in values for form in (value, escape(value), quote(value, safe="")) if len(form) >= MIN_SECRET_CHARS}
    if not forms:
        return None
    return re.compile("|".join(re.escape(form) for form in sorted(forms, key=lambda f: (-len(f), f))))


def _mask_named(match: re.Match[str], name_group: int, value_group: int) -> str:
    """The match with its value masked when its name is secret (a `${...}` reference is no value: kept)."""
    value = match.group(value_group)
    if not value or value.startswith("${") or not is_secret(match.group(name_group)):
        return match.group(0)
    start, end = match.span(value_group)
    whole = match.group(0)
    offset = match.start(0)
    return whole[: start - offset] + MASK + whole[end - offset:]


@dataclass(frozen=True)
class Masker:
    """Masks the secrets of some job properties in what a reader is shown; inactive for readers who may see them."""

    values: tuple[str, ...] = ()  # secret values searched for in text (secret_values())
    active: bool = True

    def text(self, text: str) -> str:
        """The text with secret values, and values written next to a secret name, replaced by MASK."""
        if not self.active or not text:
            return text
        pattern = _value_pattern(self.values)
        if pattern is not None:
            text = pattern.sub(MASK, text)
        if "</name>" in text:
            text = _XML_PAIR.sub(lambda m: _mask_named(m, 2, 4), text)
        if "=" in text or ":" in text:
            text = _LINE_PAIR.sub(lambda m: _mask_named(m, 2, 4), text)
        if "=" in text:
            text = _INLINE_PAIR.sub(lambda m: _mask_named(m, 1, 3), text)
        if ":" in text and ('"' in text or "'" in text):
            text = _QUOTED_PAIR.sub(lambda m: _mask_named(m, 2, 5), text)
        return text

    def properties(self, mapping: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of the properties: secret ones as MASK, secret values inside the others masked."""
        return dict(self.data(dict(mapping))) if self.active else dict(mapping)

    def data(self, value: Any) -> Any:
        """JSON-like data (dicts, lists, strings) masked: entries under secret names, and text everywhere."""
        if not self.active:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {name: MASK if is_secret(name) else self.data(item) for name, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(item) for item in value]
        return value

    def including(self, *sources: Any) -> Masker:
        """This masker also searching for the secret values found in `sources` (say, the data about to be shown)."""
        if not self.active:
            return self
        more = secret_values(*sources)
        if not more or set(more) <= set(self.values):
            return self
        merged = sorted(set(self.values) | set(more), key=lambda v: (-len(v), v))
        return Masker(tuple(merged))


#: What readers who may see secrets get: everything as it is.
NO_MASK = Masker(active=False)


def masker(*sources: Any) -> Masker:
    """An active masker for the secrets of these property mappings (log lines, Flower: always masked)."""
    return Masker(secret_values(*sources))


def may_see_secrets(user: Any, owner_id: Any) -> bool:
    """The job's owner and job admins (superusers, JOB_ADMIN_PERMISSION) see secret values; nobody else does."""
    if user is None or not getattr(user, "is_authenticated", False) or not getattr(user, "is_active", False):
        return False
    if owner_id is not None and user.pk == owner_id:
        return True
    return bool(user.is_superuser or user.has_perm(JOB_ADMIN_PERMISSION))


def masker_for(user: Any, owner_id: Any, *sources: Any) -> Masker:
    """NO_MASK for the owner and job admins, else a masker of the sources' secrets (read only when needed)."""
    if may_see_secrets(user, owner_id):
        return NO_MASK
    return masker(*sources)


def mask_properties(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """The properties with every secret one's value replaced by MASK (and secret values inside the others)."""
    return masker(mapping).properties(mapping)


def mask_text(text: str, properties: Mapping[str, Any] | Iterable[Mapping[str, Any]] = ()) -> str:
    """The text with the secret values of `properties` (one mapping or several) and named secrets masked."""
    sources = [properties] if isinstance(properties, Mapping) else list(properties)
    return masker(*sources).text(text)
