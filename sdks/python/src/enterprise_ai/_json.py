"""JSON on the wire: exact decimals in both directions, RFC 3339 instants.

Reading: every JSON number with a fraction becomes a :class:`~decimal.Decimal` (``parse_float=Decimal``), so
no digit the server wrote is lost; integers stay ``int`` in raw dicts (typed results turn quantities into
``Decimal``).

Writing: a ``Decimal`` travels as a decimal *string* (the contract accepts a string wherever it accepts a
decimal number, and a string never loses a digit), a ``datetime`` as RFC 3339 UTC with millisecond
precision, a ``date`` as ``YYYY-MM-DD``.
"""

from __future__ import annotations

import datetime as _dt
import json
from decimal import Decimal
from typing import Any, Mapping, Union

__all__ = [
    "DateLike",
    "decode",
    "encode",
    "format_date_param",
    "format_instant",
    "parse_instant",
    "to_wire",
    "utc_now_rfc3339",
]

DateLike = Union[str, _dt.date, _dt.datetime]


def decode(content: bytes) -> Any:
    """Parses a response body, keeping decimals exact."""
    return json.loads(content, parse_float=Decimal)


def decimal_text(value: Decimal) -> str:
    """A decimal's digits in positional notation (never ``1E+3``)."""
    if not value.is_finite():
        raise ValueError(f"cannot send a non-finite decimal: {value}")
    text = format(value, "f")
    return "0" if text in ("-0", "-0.0") else text


def format_instant(value: _dt.datetime) -> str:
    """An aware ``datetime`` as RFC 3339 UTC with millisecond precision: ``2026-10-01T00:00:15.000Z``.

    A naive ``datetime`` is refused: its instant is ambiguous.
    """
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        raise ValueError(
            f"naive datetime {value.isoformat()!r}: give a timezone-aware datetime "
            "(e.g. datetime.now(timezone.utc))"
        )
    utc = value.astimezone(_dt.timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def utc_now_rfc3339() -> str:
    """Now, as RFC 3339 UTC with millisecond precision."""
    return format_instant(_dt.datetime.now(_dt.timezone.utc))


def format_date_param(value: DateLike, name: str) -> str:
    """A ``from``/``to``-style parameter: a ``str`` as given, a ``date`` as ``YYYY-MM-DD``, an aware
    ``datetime`` as RFC 3339."""
    if isinstance(value, _dt.datetime):
        return format_instant(value)
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, str):
        if not value:
            raise ValueError(f"{name} must not be empty")
        return value
    raise TypeError(f"{name} must be a str, a date or an aware datetime, not {type(value).__name__}")


def parse_instant(value: str) -> _dt.datetime:
    """Parses an RFC 3339 instant (``Z`` or an offset) into an aware ``datetime`` (Python 3.9 compatible)."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    if "T" not in text and "t" not in text and " " not in text and len(text) == 10:
        return _dt.datetime.fromisoformat(text).replace(tzinfo=_dt.timezone.utc)
    head, sep, tail = text.partition(".")
    if sep:
        # Python < 3.11 only parses 3 or 6 fraction digits: pad or cut to microseconds.
        digits = ""
        rest = tail
        while rest and rest[0].isdigit():
            digits, rest = digits + rest[0], rest[1:]
        text = f"{head}.{(digits + '000000')[:6]}{rest}"
    parsed = _dt.datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=_dt.timezone.utc)
    return parsed


def to_wire(value: Any) -> Any:
    """Converts a payload to JSON-ready values: ``Decimal`` -> string, ``datetime`` -> RFC 3339,
    ``date`` -> ``YYYY-MM-DD``, mappings and sequences recursively. Never mutates its input."""
    if isinstance(value, Decimal):
        return decimal_text(value)
    if isinstance(value, _dt.datetime):
        return format_instant(value)
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): to_wire(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_wire(v) for v in value]
    return value


def encode(payload: Any) -> bytes:
    """A request body: compact UTF-8 JSON of :func:`to_wire` of the payload."""
    return json.dumps(to_wire(payload), ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(
        "utf-8"
    )


JsonValue = Any
"""A JSON value as the SDK decodes it (numbers with a fraction as ``Decimal``)."""
