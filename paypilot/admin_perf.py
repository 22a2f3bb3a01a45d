"""Changelists that cost the same at a thousand rows and at a million: no COUNT, no DISTINCT.

Django's stock changelist counts the filtered queryset and the whole table on every view,
lists a plain field's filter values with `SELECT DISTINCT` over the table, evaluates
`date_hierarchy` with another DISTINCT, and reads a deep page by joining every skipped row.
At 1,000,000 invoices that was 4.2 s a view (docs/benchmarks.md). Here:

- `WindowPaginator` counts nothing: it reads the primary keys of the requested page plus one
  (so it knows whether a next page exists) over the changelist's ordering index, then loads
  the page's rows with their `select_related` joins by primary key. A deep page costs an
  index walk over the skipped keys, never a join or a COUNT over them.
- `FastChangelistMixin` turns off the full-table count and hands out that paginator; the
  pagination and actions templates (`templates/admin/`) say "page N" and "more" instead of
  a total they do not know.
- `choices_filter` builds a list filter from a fixed table of values (the rules table, the
  template catalogue's locales, a model's choices), so drawing the filter runs no query.
- `prefix` is a field lookup for admin search: "starts with", answered by a B-tree index
  on both vendors (a `varchar_pattern_ops` index on PostgreSQL for `LIKE 'term%'`, a
  plain index range `>= term AND < successor(term)` on SQLite, where `LIKE` is case
  insensitive and would not use a plain index). Case-sensitive, like the ids it serves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import cached_property
from typing import Any, ClassVar

from django.contrib import admin
from django.contrib.admin.utils import lookup_spawns_duplicates
from django.contrib.admin.views.main import PAGE_VAR
from django.core.paginator import EmptyPage, Page, PageNotAnInteger, Paginator
from django.db import models
from django.db.models import Lookup, Q, QuerySet
from django.http import HttpRequest


def successor(term: str) -> str:
    """The smallest string greater than every string starting with `term` (code-point order).

    Strings starting with "ab" are exactly those s with "ab" <= s < "ac"; when the last
    character is already the largest code point, drop it and carry (like adding one).
    """
    chars = list(term)
    while chars and ord(chars[-1]) == 0x10FFFF:
        chars.pop()
    if not chars:
        return ""  # no upper bound: every string at or after term qualifies
    chars[-1] = chr(ord(chars[-1]) + 1)
    return "".join(chars)


@models.CharField.register_lookup
class Prefix(Lookup):
    """`field__prefix="in_12"`: the value starts with the term, case-sensitive, indexable."""

    lookup_name = "prefix"
    prepare_rhs = False

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        term = str(self.rhs)
        if connection.vendor == "postgresql":
            # LIKE with a constant prefix is turned into an index range by PostgreSQL itself
            # when the index uses varchar_pattern_ops (whatever the database's collation).
            return f"{lhs} LIKE %s", [*lhs_params, connection.ops.prep_for_like_query(term) + "%"]
        upper = successor(term)
        if not upper:
            return f"{lhs} >= %s", [*lhs_params, term]
        # SQLite's BINARY collation compares UTF-8 bytes, i.e. code points: the range is exact.
        return f"({lhs} >= %s AND {lhs} < %s)", [*lhs_params, term, *lhs_params, upper]


class WindowPaginator(Paginator):
    """A paginator that never counts: it knows the rows before the requested page (the
    offset) and whether at least one row follows it.

    `count` is therefore "rows up to the end of this page, plus one if more follow", so
    `num_pages` is this page, or this page plus one; `exact` says whether the count is the
    true total (only when the page is the last one).
    """

    def __init__(self, object_list: QuerySet[Any], per_page: int, orphans: int = 0,
                 allow_empty_first_page: bool = True, *, number: int = 1) -> None:
        super().__init__(object_list, per_page, 0, allow_empty_first_page)
        self.queryset: QuerySet[Any] = object_list
        self.number = max(1, number)

    @cached_property
    def _window_pks(self) -> list[Any]:
        """Primary keys of the requested page and one more, in the changelist's order."""
        bottom = (self.number - 1) * self.per_page
        return list(self.queryset.values_list("pk", flat=True)[bottom : bottom + self.per_page + 1])

    @cached_property
    def count(self) -> int:
        return (self.number - 1) * self.per_page + len(self._window_pks)

    @property
    def exact(self) -> bool:
        return len(self._window_pks) <= self.per_page

    def page(self, number: Any) -> Page:
        number = self.validate_number(number)
        if number != self.number:  # the changelist only ever asks for the page it named
            return super().page(number)
        pks = self._window_pks[: self.per_page]
        # The rows themselves, with the changelist's select_related joins, by primary key;
        # the ordering is the window's (already computed), so the database sorts nothing.
        rows = {obj.pk: obj for obj in self.queryset.order_by().filter(pk__in=pks)}
        return Page([rows[pk] for pk in pks if pk in rows], number, self)

    def validate_number(self, number: Any) -> int:
        try:
            value = int(number)
        except (TypeError, ValueError) as error:
            raise PageNotAnInteger("That page number is not an integer") from error
        if value < 1:
            raise EmptyPage("That page number is less than 1")
        if value > self.num_pages and not (value == 1 and self.allow_empty_first_page):
            raise EmptyPage("That page contains no results")
        return value


def _page_number(request: HttpRequest) -> int:
    # The same parse as Django's ChangeList (a bad value means page 1).
    try:
        return int(request.GET.get(PAGE_VAR, 1))
    except ValueError:
        return 1


class FastChangelistMixin:
    """Mix into a ModelAdmin (before `admin.ModelAdmin`): no COUNT over the table, pages
    read over the ordering index. Give the ModelAdmin an `ordering` that an index serves."""

    # ClassVar as on ModelAdmin (django-stubs), so a subclass may set them again.
    show_full_result_count: ClassVar[bool] = False
    # Never offer "show all": with no count, "all" could be the whole table.
    list_max_show_all: ClassVar[int] = 0

    def get_search_results(self, request: HttpRequest, queryset: QuerySet[Any],
                           search_term: str) -> tuple[QuerySet[Any], bool]:
        """With only `__prefix` search fields, the whole term is one prefix: Django's split
        into words would make "Customer 42" the prefixes "Customer" AND "42", the first
        matching nearly every row (261 ms at 200,000 customers, against a few ms)."""
        fields = list(self.get_search_fields(request))  # type: ignore[attr-defined]
        term = search_term.strip()
        if not term or not fields or not all(f.endswith(f"__{Prefix.lookup_name}") for f in fields):
            return super().get_search_results(request, queryset, search_term)  # type: ignore[misc]
        match = Q()
        for field in fields:
            match |= Q(**{field: term})
        opts = self.model._meta  # type: ignore[attr-defined]
        return queryset.filter(match), any(lookup_spawns_duplicates(opts, f) for f in fields)

    def get_paginator(self, request: HttpRequest, queryset: QuerySet[Any], per_page: int,
                      orphans: int = 0, allow_empty_first_page: bool = True) -> WindowPaginator:
        return WindowPaginator(queryset, per_page, orphans, allow_empty_first_page,
                               number=_page_number(request))


def choices_filter(*, title: str, parameter: str, lookup: str,
                   choices: Callable[[], Iterable[tuple[str, str]]]) -> type[admin.SimpleListFilter]:
    """A list filter over `lookup` whose values come from a fixed table (`choices()`, read
    when the page is drawn), never from the rows: drawing it runs no query."""

    class ChoicesFilter(admin.SimpleListFilter):
        def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
            return list(choices())

        def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
            value = self.value()
            return queryset.filter(**{lookup: value}) if value is not None else queryset

    ChoicesFilter.title = title
    ChoicesFilter.parameter_name = parameter
    ChoicesFilter.__name__ = f"{parameter.title().replace('_', '')}ChoicesFilter"
    return ChoicesFilter


def pairs(values: Sequence[str]) -> list[tuple[str, str]]:
    """(value, label) pairs for a tuple of codes that are their own labels."""
    return [(value, value) for value in values]


def input_filter(*, title: str, parameter: str, lookup: str,
                 normalise: Callable[[str], str] = str.strip) -> type[admin.SimpleListFilter]:
    """A list filter with a text box instead of a list of values: for open-ended codes (a
    currency, a provider's event type, an audit event name) whose values only the rows know.
    It runs no query to draw; the filter itself is an equality on `lookup`."""

    class InputFilter(admin.SimpleListFilter):
        template = "admin/paypilot/input_filter.html"

        def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
            return []

        def has_output(self) -> bool:
            return True

        def value(self) -> str | None:
            raw = super().value()
            return normalise(raw) if raw else None

        def choices(self, changelist: Any) -> Any:
            # One "choice": what the template needs to draw the box and keep the other
            # filters (hidden inputs) when it is submitted.
            yield {
                "parameter": self.parameter_name,
                "current": self.value() or "",
                "clear_url": changelist.get_query_string(remove=[self.parameter_name]),
                "hidden": [(key, value) for key, value in changelist.params.items()
                           if key != self.parameter_name],
            }

        def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
            value = self.value()
            return queryset.filter(**{lookup: value}) if value else queryset

    InputFilter.title = title
    InputFilter.parameter_name = parameter
    InputFilter.__name__ = f"{parameter.title().replace('_', '')}InputFilter"
    return InputFilter


def upper(value: str) -> str:
    """Currency codes are stored upper case."""
    return value.strip().upper()
