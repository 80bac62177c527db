"""`?limit=&offset=` pages of the native API: bounded, and a bad value is a 400 naming it, never ignored.

Its own module, importing only DRF's pagination: it is DEFAULT_PAGINATION_CLASS, which DRF
imports while defining its generic views, so it cannot live beside code that imports those.
"""

from __future__ import annotations

import re

from rest_framework import exceptions
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request

MAX_OFFSET = 2**31 - 1  # SQLite integers overflow far beyond; nobody pages this deep
_WHOLE_NUMBER = re.compile(r"[0-9]{1,30}")  # int() of thousands of digits is refused (and slow)


class Pagination(LimitOffsetPagination):
    """`?limit=&offset=` pages: limit 1 or more (capped at 1000), offset 0 to MAX_OFFSET; anything else is a 400."""

    default_limit = 50
    max_limit = 1000

    def get_limit(self, request: Request) -> int:
        """The page size: default 50 when missing, at most max_limit; 400 unless a whole number of 1 or more."""
        number = self._whole_number(request, self.limit_query_param)
        if number is None:
            return self.default_limit
        if number < 1:
            raise exceptions.ValidationError({self.limit_query_param: ["must be 1 or more"]})
        return min(number, self.max_limit)

    def get_offset(self, request: Request) -> int:
        """Rows to skip: 0 when missing; 400 unless a whole number from 0 to MAX_OFFSET."""
        number = self._whole_number(request, self.offset_query_param)
        if number is None:
            return 0
        if number > MAX_OFFSET:
            raise exceptions.ValidationError({self.offset_query_param: [f"must be at most {MAX_OFFSET}"]})
        return number

    @staticmethod
    def _whole_number(request: Request, name: str) -> int | None:
        """The parameter as a non-negative integer, None when absent or empty; 400 naming it otherwise."""
        raw = request.query_params.get(name)
        if raw is None or not raw.strip():
            return None
        if not _WHOLE_NUMBER.fullmatch(raw.strip()):
            raise exceptions.ValidationError({name: [f"must be a whole number of 0 or more, got {raw[:40]!r}"]})
        return int(raw)
