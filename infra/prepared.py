"""Querysets compiled once per process, then run again with other values.

Django builds and compiles a queryset on every call. On the reads and writes every submission
makes (the token, the assignment it goes to, the status poll, the worker's claim and result) that
is 1–6 ms of CPU per query on a small machine, against 0.1–0.3 ms for running its SQL. A prepared
query builds its queryset once from placeholder values, compiles it, and afterwards only puts the
call's values into the compiled parameters; the ORM still reads the rows into model instances.

The build function must give a queryset of the same shape whatever the values: each value used with
exact lookups or as an update value, never None or a list (those change the SQL), never a part of a
value (its date, a prefix); and it must read nothing else (no database, no clock). The first compile
checks what it can: three compiles with very different placeholders must give the same SQL and
differ only where the values went. A call whose values do not fit (another type, None, an int
beyond 64 bits, a naive datetime) runs the queryset the ordinary way, as every call does with
GRADER_PREPARED_QUERIES off. Why it is kept, what it depends on and what guards it:
docs/decisions/0002-prepared-queries.md.
"""

from __future__ import annotations

import copy
import inspect
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, NamedTuple, TypeVar

from django.conf import settings
from django.core.exceptions import EmptyResultSet, FullResultSet
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models import Model, QuerySet
from django.db.models.sql import UpdateQuery
from django.db.transaction import TransactionManagementError
from django.utils import timezone

R = TypeVar("R")  # what a row of the queryset is: a model instance, a dict, a value
Adapt = Callable[[Any, Any], Any]  # (value, connection) -> the parameter the compiler would make
TYPES: tuple[type, ...] = (int, str, datetime, uuid.UUID)
ROUNDS = 3
INT64 = range(-(2**63), 2**63)


class PreparedError(Exception):
    """The build function gives SQL that depends on its values: it cannot be prepared."""


def _placeholder(kind: type, index: int, round_: int) -> Any:
    """A value distinct per parameter and per round, and unlike the other rounds in everything a build
    function might take from it (size, digits, length, prefix, date, hour), so that SQL depending on
    more than the value itself shows up as a difference. Ints stay within every integer column's
    range (a smallint's: Django compiles an out-of-range lookup away)."""
    if kind is int:
        return (20011, 301, 9007)[round_] + 13 * index
    if kind is str:
        return ("\x00p{}\x00", "~prepared value, round two, {}~", "Zz-{}-zZ\t")[round_].format(index)
    if kind is datetime:
        start = (datetime(1901, 2, 3, 4, 5, 6, tzinfo=UTC), datetime(1987, 11, 23, 19, 41, 53, tzinfo=UTC),
                 datetime(2043, 7, 15, 9, 12, 31, tzinfo=UTC))[round_]
        return start + timedelta(seconds=index)
    return uuid.UUID(int=(0x1F, 0xABCDEF << 80, 0x77 << 40)[round_] + index)


def _adapters() -> list[Adapt]:
    """How the compiler turns a value into a parameter: as it is, a datetime column's text (SQLite,
    time zones), a UUID's hex (databases without a UUID type)."""
    return [lambda value, connection: value,
            lambda value, connection: connection.ops.adapt_datetimefield_value(value),
            lambda value, connection: value if connection.features.has_native_uuid_field else value.hex]


class _Round(NamedTuple):
    """One compile with one set of placeholders."""

    values: dict[str, Any]
    template: Any
    compiler: Any
    sql: str
    params: tuple[Any, ...]


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]
    slots: dict[str, tuple[tuple[int, Adapt], ...]]  # name -> (position in params, adapter there), …
    template: Any  # the compiled queryset (select) or UpdateQuery (update)
    compiler: Any
    converters: dict[int, Any]  # a select's column converters (from_db_value), found once

    def params_for(self, values: dict[str, Any], connection: Any) -> list[Any]:
        params = list(self.params)
        for name, places in self.slots.items():
            for position, adapt in places:
                params[position] = adapt(values[name], connection)
        return params


class _Preparable:
    """What prepared selects and updates share: the declared parameters and the per-database compile."""

    def __init__(self, build: Callable[..., Any]) -> None:
        self.build = build
        signature = inspect.signature(build, eval_str=True)
        self.kinds = {name: p.annotation for name, p in signature.parameters.items()}
        if any(kind not in TYPES for kind in self.kinds.values()):
            raise PreparedError(f"{build.__qualname__}: parameters must be annotated as one of {TYPES}")
        self._compiled: dict[tuple[str, str], _Compiled] = {}
        self._lock = threading.Lock()

    def _usable(self, values: dict[str, Any]) -> bool:
        """The values fit the compiled shape and prepared queries are on (else the call runs the ordinary way)."""
        return settings.GRADER_PREPARED_QUERIES and values.keys() == self.kinds.keys() and all(
            _fits(values[name], kind) for name, kind in self.kinds.items())

    def _get(self, alias: str) -> _Compiled:
        connection = connections[alias]
        key = (alias, connection.vendor)
        compiled = self._compiled.get(key)
        if compiled is None:
            with self._lock:
                compiled = self._compiled.get(key) or self._compile(alias, connection)
                self._compiled[key] = compiled
        return compiled

    def _compile(self, alias: str, connection: Any) -> _Compiled:
        name = self.build.__qualname__
        rounds = []
        for round_ in range(ROUNDS):
            values = {key: _placeholder(kind, i, round_) for i, (key, kind) in enumerate(self.kinds.items())}
            try:
                template, compiler = self._template(alias, values)
                sql, params = compiler.as_sql()
            except (EmptyResultSet, FullResultSet) as exc:  # a value compiled away: no SQL to reuse
                raise PreparedError(f"{name}: the query compiles to nothing for some values") from exc
            rounds.append(_Round(values, template, compiler, sql, tuple(params)))
        first, others = rounds[0], rounds[1:]
        if any(other.sql != first.sql or len(other.params) != len(first.params) for other in others):
            raise PreparedError(f"{name}: the SQL depends on the values")
        slots = {key: _slot(key, [r.values[key] for r in rounds], [r.params for r in rounds], connection)
                 for key in self.kinds}
        used = {position for places in slots.values() for position, _ in places}
        if any(other.params[i] != first.params[i]
               for other in others for i in range(len(first.params)) if i not in used):
            raise PreparedError(f"{name}: a parameter changed that no value explains")
        compiler = first.compiler
        converters = {}
        if getattr(compiler, "select", None) is not None:  # a select: its columns' converters, once
            converters = compiler.get_converters([column[0] for column in compiler.select[0:compiler.col_count]])
        compiler.connection = None  # each call binds its own thread's connection (_bound)
        return _Compiled(first.sql, first.params, slots, first.template, compiler, converters)

    def _template(self, alias: str, values: dict[str, Any]) -> tuple[Any, Any]:
        raise NotImplementedError


def _slot(name: str, values: Sequence[Any], params: Sequence[Sequence[Any]],
          connection: Any) -> tuple[tuple[int, Adapt], ...]:
    """Where the value `name` went in the parameters (the same places in every round), and how the
    compiler adapted it at each place."""
    places = []
    for position, param in enumerate(params[0]):
        adapt = _adapter(param, values[0], connection)
        if adapt is not None and all(_same(round_params[position], adapt(value, connection))
                                     for round_params, value in zip(params, values, strict=True)):
            places.append((position, adapt))
    if not places:
        raise PreparedError(f"the value {name!r} is not a plain parameter of the SQL")
    return tuple(places)


def _adapter(param: Any, value: Any, connection: Any) -> Adapt | None:
    """How `value` became `param`, if it did: one of _adapters, or a typed wrapper of it (psycopg's
    Int4 for an integer column)."""
    for adapt in _adapters():
        try:
            if _same(param, adapt(value, connection)):
                return adapt
        except (AttributeError, TypeError, ValueError):
            continue
    wrapper = type(param)
    if wrapper is not type(value) and isinstance(param, type(value)) and param == value:
        return lambda v, c: wrapper(v)
    return None


def _fits(value: Any, kind: type) -> bool:
    """A value the compiled SQL takes as the placeholder was taken: the declared type, an int within 64
    bits (Django compiles a larger one away), an aware datetime (Django reads a naive one in
    TIME_ZONE, which the adapter does not)."""
    if not isinstance(value, kind) or isinstance(value, bool):
        return False
    if kind is int:
        return value in INT64
    if kind is datetime:
        return not settings.USE_TZ or timezone.is_aware(value)
    return True


def _same(param: Any, made: Any) -> bool:
    return type(param) is type(made) and param == made


class PreparedQuery(_Preparable, Generic[R]):
    """`build(**values)` → a queryset; calling the prepared query returns its rows as a list.

    Do not prefetch in `build` (the prefetch would compile its own query each time): read related
    rows with a prepared query of their own and attach them with `prefetched`."""

    def __call__(self, **values: Any) -> list[R]:
        if not self._usable(values):
            return list(self.build(**values))
        alias = DEFAULT_DB_ALIAS
        compiled = self._get(alias)
        connection = connections[alias]
        if compiled.template.query.select_for_update and connection.features.has_select_for_update \
                and connection.get_autocommit():  # what the compiler would say; the lock would be no lock
            raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
        queryset = compiled.template._chain()
        params = compiled.params_for(values, connection)
        queryset.query.get_compiler = lambda *args, **kwargs: _bound(compiled, alias, params)
        return list(queryset)

    def first(self, **values: Any) -> R | None:
        """The first row, or None: for a build that reads at most one row (by a unique key, or `[:1]`)."""
        rows = self(**values)
        return rows[0] if rows else None

    def _template(self, alias: str, values: dict[str, Any]) -> tuple[Any, Any]:
        queryset = self.build(**values).using(alias)
        if queryset._prefetch_related_lookups:
            raise PreparedError(f"{self.build.__qualname__}: prefetch with a prepared query of its own")
        return queryset, queryset.query.get_compiler(using=alias)


class PreparedUpdate(_Preparable):
    """`build(**values)` → (queryset, {field: value or expression}); calling it runs the UPDATE and
    returns the number of rows changed, as `queryset.update(**fields)` would."""

    def __call__(self, **values: Any) -> int:
        if not self._usable(values):
            queryset, fields = self.build(**values)
            return int(queryset.update(**fields))
        alias = DEFAULT_DB_ALIAS
        compiled = self._get(alias)
        connection = connections[alias]
        with transaction.mark_for_rollback_on_error(using=alias), connection.cursor() as cursor:
            cursor.execute(compiled.sql, compiled.params_for(values, connection))
            return int(cursor.rowcount)

    def _template(self, alias: str, values: dict[str, Any]) -> tuple[Any, Any]:
        queryset, fields = self.build(**values)
        query = queryset.query.chain(UpdateQuery)
        query.add_update_values(fields)
        compiler = query.get_compiler(alias)
        compiler.pre_sql_setup()
        if query.related_updates:
            raise PreparedError(f"{self.build.__qualname__}: updates of parent models cannot be prepared")
        return query, compiler


def _bound(compiled: _Compiled, alias: str, params: list[Any]) -> Any:
    """The compiled select's compiler, on this thread's connection, giving this call's parameters."""
    compiler = copy.copy(compiled.compiler)
    compiler.connection = connections[alias]
    compiler.as_sql = lambda *args, **kwargs: (compiled.sql, params)
    compiler.get_converters = lambda expressions: compiled.converters
    return compiler


def prepared_query(build: Callable[..., QuerySet[Any, R]]) -> PreparedQuery[R]:
    """Decorator form: `@prepared_query def tokens(key_hash: str): return ApiToken.objects.filter(…)`."""
    return PreparedQuery(build)


def prepared_update(build: Callable[..., tuple[QuerySet[Any], dict[str, Any]]]) -> PreparedUpdate:
    return PreparedUpdate(build)


def prefetched(instance: Model, name: str, rows: list[Any]) -> None:
    """Attach `rows` as if `prefetch_related(name)` had read them (a reverse foreign key), each row
    pointing back at `instance`, so `instance.<name>.all()` runs no query."""
    field = getattr(type(instance), name).field  # the foreign key on the rows' model
    cache = getattr(instance, "_prefetched_objects_cache", None)
    if cache is None:
        cache = instance._prefetched_objects_cache = {}
    cache.pop(field.remote_field.cache_name, None)
    queryset = getattr(instance, name).get_queryset()  # filtered to the instance, as Django caches it
    for row in rows:
        field.set_cached_value(row, instance)
    queryset._result_cache, queryset._prefetch_done = rows, True
    cache[field.remote_field.cache_name] = queryset
