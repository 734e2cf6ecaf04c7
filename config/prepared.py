"""Querysets compiled once per process, then run again with other values.

Django builds and compiles a queryset on every call. On the reads and writes every submission
makes (the token, the assignment it goes to, the status poll, the worker's claim and result) that
is 1–6 ms of CPU per query on a small machine, against 0.1–0.3 ms for running its SQL. A prepared
query builds its queryset once from placeholder values, compiles it, and afterwards only puts the
call's values into the compiled parameters; the ORM still reads the rows into model instances.

The build function must give a queryset of the same shape whatever the values: each value used with
exact lookups or as an update value, never None or a list (those change the SQL). The first compile
checks this (a second compile with other placeholders must differ only where they went), and a call
whose values are not of the declared type runs the queryset the ordinary way.
"""

from __future__ import annotations

import copy
import inspect
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models import Model, QuerySet
from django.db.models.sql import UpdateQuery

R = TypeVar("R")  # what a row of the queryset is: a model instance, a dict, a value
Adapt = Callable[[Any, Any], Any]  # (value, connection) -> the parameter the compiler would make
TYPES: tuple[type, ...] = (int, str, datetime, uuid.UUID)


class PreparedError(Exception):
    """The build function gives SQL that depends on its values: it cannot be prepared."""


def _placeholder(kind: type, index: int, round_: int) -> Any:
    """A value no real row or constant in our queries has, distinct per parameter and per round."""
    n = 7_340_000_000_000 + 1000 * round_ + index
    if kind is int:
        return n
    if kind is str:
        return f"\x00prepared-{round_}-{index}\x00"
    if kind is datetime:
        return datetime(1901, 1, 1, tzinfo=UTC) + timedelta(seconds=n % 10_000_000)
    return uuid.UUID(int=n)


def _adapters() -> list[Adapt]:
    """How the compiler turns a value into a parameter: as it is, a datetime column's text (SQLite,
    time zones), a UUID's hex (databases without a UUID type)."""
    return [lambda value, connection: value,
            lambda value, connection: connection.ops.adapt_datetimefield_value(value),
            lambda value, connection: value if connection.features.has_native_uuid_field else value.hex]


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]
    slots: dict[str, tuple[tuple[int, ...], Adapt]]  # name -> (positions in params, adapter)
    template: Any  # the compiled queryset (select) or UpdateQuery (update)
    compiler: Any
    converters: dict[int, Any]  # a select's column converters (from_db_value), found once

    def params_for(self, values: dict[str, Any], connection: Any) -> list[Any]:
        params = list(self.params)
        for name, (positions, adapt) in self.slots.items():
            value = adapt(values[name], connection)
            for position in positions:
                params[position] = value
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
        """The values fit the compiled shape (else the call runs the ordinary way)."""
        return values.keys() == self.kinds.keys() and all(
            isinstance(values[name], kind) and not (kind is int and isinstance(values[name], bool))
            for name, kind in self.kinds.items())

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
        rounds = []
        for round_ in (0, 1):
            values = {name: _placeholder(kind, i, round_) for i, (name, kind) in enumerate(self.kinds.items())}
            template, compiler = self._template(alias, values)
            sql, params = compiler.as_sql()
            rounds.append((values, template, compiler, sql, tuple(params)))
        (values, template, compiler, sql, params), (other_values, _, _, other_sql, other_params) = rounds
        if sql != other_sql or len(params) != len(other_params):
            raise PreparedError(f"{self.build.__qualname__}: the SQL depends on the values")
        slots = {name: _slot(name, values[name], other_values[name], params, other_params, connection)
                 for name in self.kinds}
        used = {position for positions, _ in slots.values() for position in positions}
        if any(params[i] != other_params[i] for i in range(len(params)) if i not in used):
            raise PreparedError(f"{self.build.__qualname__}: a parameter changed that no value explains")
        converters = {}
        if getattr(compiler, "select", None) is not None:  # a select: its columns' converters, once
            converters = compiler.get_converters([column[0] for column in compiler.select[0:compiler.col_count]])
        return _Compiled(sql, params, slots, template, compiler, converters)

    def _template(self, alias: str, values: dict[str, Any]) -> tuple[Any, Any]:
        raise NotImplementedError


def _slot(name: str, value: Any, other: Any, params: Sequence[Any], other_params: Sequence[Any],
          connection: Any) -> tuple[tuple[int, ...], Adapt]:
    """Where the value `name` went in the parameters, and how the compiler adapted it."""
    for adapt in _adapters():
        try:
            made, other_made = adapt(value, connection), adapt(other, connection)
        except (AttributeError, TypeError, ValueError):
            continue
        positions = tuple(i for i, p in enumerate(params) if _same(p, made))
        if positions and all(_same(other_params[i], other_made) for i in positions):
            return positions, adapt
    raise PreparedError(f"the value {name!r} is not a plain parameter of the SQL")


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
        queryset = compiled.template._chain()
        params = compiled.params_for(values, connections[alias])
        queryset.query.get_compiler = lambda *args, **kwargs: _bound(compiled, alias, params)
        return list(queryset)

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
    manager = getattr(type(instance), name)
    field = manager.field  # the foreign key on the rows' model
    for row in rows:
        field.set_cached_value(row, instance)
    queryset = field.model._default_manager.all()
    queryset._result_cache, queryset._prefetch_done = rows, True
    cache = getattr(instance, "_prefetched_objects_cache", None)
    if cache is None:
        cache = instance._prefetched_objects_cache = {}
    cache[field.remote_field.cache_name] = queryset
