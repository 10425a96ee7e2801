"""What the generated models (:mod:`enterprise_ai._models`) stand on: the value parsers of ``from_json`` and
the bases every model, every answer and every list answer share. Hand-written; small on purpose."""

from __future__ import annotations

import datetime as _dt
from abc import ABCMeta
from decimal import Decimal
from typing import Any, Callable, Dict, Generic, Iterator, List, Mapping, Optional, TypeVar, Union, overload

from ._json import parse_instant

T = TypeVar("T")

__all__ = [
    "ItemList",
    "Model",
    "Result",
    "p_bool",
    "p_date",
    "p_dec",
    "p_instant",
    "p_int",
    "p_list",
    "p_obj",
    "p_opt",
    "p_raw",
    "p_str",
]


class Model(metaclass=ABCMeta):  # noqa: B024 - no abstract method: only for register()
    """Base of every generated model (an ``ABCMeta`` so that a model may name another it extends, as
    ``ApiKeyCreated`` does ``ApiKey``)."""

    __slots__ = ()


class Result:
    """What every answer has: ``request_id``, the ``X-Request-Id`` of the answer it came from (``None`` for a
    result built by hand). Not a field: out of equality, ``repr`` and ``dataclasses.asdict``."""

    @property
    def request_id(self) -> Optional[str]:
        value = self.__dict__.get("_request_id")
        return value if isinstance(value, str) else None

    def _set_request_id(self, request_id: Optional[str]) -> None:
        object.__setattr__(self, "_request_id", request_id)


class ItemList(Generic[T]):
    """A list answer (``{"items": [...]}``): iterable, sized and indexable like a list."""

    items: List[T]

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> List[T]: ...

    def __getitem__(self, index: Union[int, slice]) -> Union[T, List[T]]:
        return self.items[index]

    def __bool__(self) -> bool:
        return bool(self.items)


def p_dec(value: Any) -> Decimal:
    """An exact decimal: a JSON number (read as ``Decimal`` by the SDK's decoder), an integer or a decimal
    string; a ``float`` (never sent by the server) through its shortest repr."""
    if isinstance(value, bool):
        raise TypeError(f"expected a decimal, got a boolean: {value!r}")
    if isinstance(value, Decimal):
        return value
    if isinstance(value, (int, str)):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    raise TypeError(f"expected a decimal, got {type(value).__name__}: {value!r}")


def p_str(value: Any) -> str:
    if value is None:
        raise TypeError("expected a string, got null")
    return str(value)


def p_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, Decimal, str)):
        raise TypeError(f"expected an integer, got {value!r}")
    return int(value)


def p_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected a boolean, got {value!r}")
    return value


def p_instant(value: Any) -> _dt.datetime:
    """An RFC 3339 instant as a timezone-aware ``datetime``."""
    return parse_instant(p_str(value))


def p_date(value: Any) -> _dt.date:
    return _dt.date.fromisoformat(p_str(value))


def p_obj(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"expected an object, got {type(value).__name__}")
    return value


def p_list(value: Any, parse: Callable[[Any], T]) -> List[T]:
    """A JSON array (``null`` or absent: empty)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise TypeError(f"expected a list, got {type(value).__name__}")
    return [parse(v) for v in value]


def p_opt(value: Any, parse: Callable[[Any], T]) -> Optional[T]:
    return None if value is None else parse(value)


def p_raw(d: Mapping[str, Any]) -> Dict[str, Any]:
    return dict(d)
