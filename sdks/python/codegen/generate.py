#!/usr/bin/env python3
"""Generates the SDK's models, ``src/enterprise_ai/_models.py``, from ``contracts/v1/openapi.json``.

    python3 sdks/python/codegen/generate.py           # (re)writes src/enterprise_ai/_models.py
    python3 sdks/python/codegen/generate.py --check   # exit 1 when the committed file is stale

Standard library only. Every object schema an answer uses becomes a frozen dataclass with a ``from_json``
classmethod: decimal money and quantities as ``Decimal`` (``DecimalString`` strings and every JSON number that
is not an integer -- never a float), ``date-time`` strings as timezone-aware ``datetime``, nested objects as
their own classes, ``raw`` (the JSON object as sent, unknown fields a newer server adds included) kept out of
``repr`` and equality. Every object schema a request body uses becomes a ``TypedDict`` (``total=False``).
A hand-written mixin of the same name in ``_model_helpers.py`` (``<Name>Helpers``) adds methods to a class.
"""

from __future__ import annotations

import argparse
import json
import keyword
import re
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

HERE = Path(__file__).resolve().parent
SDK = HERE.parent
CONTRACT = SDK.parent.parent / "contracts" / "v1" / "openapi.json"
OUTPUT = SDK / "src" / "enterprise_ai" / "_models.py"
HELPERS = SDK / "src" / "enterprise_ai" / "_model_helpers.py"

#: Schemas of exact decimals written as strings.
DECIMAL_STRINGS = {"DecimalString"}
#: Names of inline objects (``Schema.property`` or ``Schema.property[]``) where the default (Schema +
#: Property) would not read well.
INLINE_NAMES: Dict[str, str] = {
    "ExplanationBucket.claims[]": "ExplanationClaim",
    "ExplanationBucket.priced[]": "ExplanationPriced",
    "ExplanationBucket.priced[].parties[]": "ExplanationPartyCost",
    "AllocationExplanation.idle_spread[]": "ExplanationIdleSpread",
    "AllocationExplanation.idle_spread[].parties[]": "ExplanationIdleShare",
    "AllocationExplanation.rounding[]": "ExplanationRounding",
    "AllocationExplanation.rounding[].lines[]": "ExplanationRoundingLine",
    "Provider.pricing": "ProviderPricing",
    "Reservation.estimate": "ReservationAmounts",
    "Reservation.actual": "ReservationAmounts",
    "TenantOfKey": "TenantRef",
}
RAW_DOC = "The JSON object as the server sent it (fields this SDK does not name included)."
#: Formats the contract does not state yet (``Schema.property`` -> format); a no-op once it does.
FORMATS: Dict[str, str] = {"Reservation.closed_at": "date-time"}
#: Fields that hold a secret: never in ``repr``.
SECRET_FIELDS = {"key"}
#: Schemas whose class has another name.
SCHEMA_NAMES: Dict[str, str] = {"ProviderCatalog": "Catalog"}
#: A model that has every field of another, and is one (``isinstance``): the second is registered as a
#: virtual subclass of the first.
SUBTYPES: Dict[str, str] = {"ApiKeyCreated": "ApiKey"}

HEADER = '''"""The API's models, GENERATED from contracts/v1/openapi.json by codegen/generate.py: do not edit.

Regenerate with ``python3 sdks/python/codegen/generate.py``; ``sdks/python/test.sh`` fails when this file is
stale. Answers are frozen dataclasses (``from_json``; ``raw`` keeps the JSON object as sent, unknown fields
included); request bodies are ``TypedDict``s. Money and quantities are ``Decimal``, never ``float``; instants
are timezone-aware ``datetime``s.
"""

# ruff: noqa: E501

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Dict, List, Mapping, Optional, TypedDict, Union

from . import _model_helpers as _h
from ._model_runtime import (
    ItemList,
    Model,
    Result,
    p_bool,
    p_date,
    p_dec,
    p_instant,
    p_int,
    p_list,
    p_obj,
    p_opt,
    p_raw,
    p_str,
)
'''


def camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[_\-\s]+", name) if part)


def fn(template: str) -> str:
    """A parser expression of ``{v}`` as a function: its name when it is one call of the value."""
    m = re.fullmatch(r"([A-Za-z_][\w.]*)\(\{v\}\)", template)
    if m:
        return m.group(1)
    return "lambda v: " + template.format(v="v")


def opt_of(ann: str) -> str:
    return ann if ann.startswith("Optional[") else f"Optional[{ann}]"


def py_name(name: str) -> str:
    return name + "_" if keyword.iskeyword(name) else name


class Gen:
    def __init__(self, doc: Dict[str, Any], helpers: Set[str]) -> None:
        self.doc = doc
        self.schemas: Dict[str, Any] = doc["components"]["schemas"]
        self.helpers = helpers
        self.classes: List[str] = []  # emitted code blocks, dependencies first
        self.done: Dict[str, str] = {}  # class name -> "dataclass"/"typeddict"
        self.top_level: Set[str] = set()

    # ------------------------------------------------------------------ schema helpers

    def ref_name(self, schema: Dict[str, Any]) -> Optional[str]:
        ref = schema.get("$ref")
        prefix = "#/components/schemas/"
        return ref[len(prefix) :] if isinstance(ref, str) and ref.startswith(prefix) else None

    def resolve(self, schema: Dict[str, Any]) -> Dict[str, Any]:
        name = self.ref_name(schema)
        return self.schemas[name] if name else schema

    def split_null(self, schema: Dict[str, Any]) -> Tuple[Dict[str, Any], bool]:
        """(the schema without its null alternative, whether null is allowed)."""
        for key in ("anyOf", "oneOf"):
            alts = schema.get(key)
            if isinstance(alts, list):
                rest = [a for a in alts if a.get("type") != "null"]
                if len(rest) < len(alts):
                    if len(rest) == 1:
                        merged = {k: v for k, v in schema.items() if k != key}
                        merged.update(rest[0])
                        return merged, True
                    return {**{k: v for k, v in schema.items() if k != key}, key: rest}, True
        t = schema.get("type")
        if isinstance(t, list) and "null" in t:
            rest_t = [x for x in t if x != "null"]
            return {**schema, "type": rest_t[0] if len(rest_t) == 1 else rest_t}, True
        return schema, False

    def is_object(self, schema: Dict[str, Any]) -> bool:
        s = self.resolve(schema)
        return s.get("type") == "object" and bool(s.get("properties"))

    # ------------------------------------------------------------------ answers

    def out_type(self, schema: Dict[str, Any], where: str) -> Tuple[str, str]:
        """(annotation, parser expression of the value ``{v}``) for an answer's value."""
        schema, nullable = self.split_null(schema)
        ann, parse = self._out_type(schema, where)
        if nullable and not ann.startswith("Optional["):
            return f"Optional[{ann}]", f"p_opt({{v}}, {fn(parse)})"
        return ann, parse

    def _out_type(self, schema: Dict[str, Any], where: str) -> Tuple[str, str]:
        name = self.ref_name(schema)
        if name in DECIMAL_STRINGS:
            return "Decimal", "p_dec({v})"
        if name:
            target = self.schemas[name]
            if target.get("type") == "object" and target.get("properties"):
                cls = SCHEMA_NAMES.get(name, name)
                self.answer_class(cls, target, name)
                return cls, f"{cls}.from_json(p_obj({{v}}))"
            return self.out_type(target, name)
        for key in ("anyOf", "oneOf"):
            if key in schema:
                return "Any", "{v}"
        t = schema.get("type")
        if t == "string":
            fmt = schema.get("format") or FORMATS.get(where)
            if fmt == "date-time":
                return "_dt.datetime", "p_instant({v})"
            if fmt == "date":
                return "_dt.date", "p_date({v})"
            return "str", "p_str({v})"
        if t == "integer":
            return "int", "p_int({v})"
        if t == "number":
            return "Decimal", "p_dec({v})"
        if t == "boolean":
            return "bool", "p_bool({v})"
        if t == "array":
            item_ann, item_parse = self.out_type(schema.get("items", {}), where + "[]")
            return f"List[{item_ann}]", f"p_list({{v}}, {fn(item_parse)})"
        if t == "object":
            if schema.get("properties"):
                cls = INLINE_NAMES.get(where) or camel(where.replace("[]", "").replace(".", "_"))
                self.answer_class(cls, schema, where)
                return cls, f"{cls}.from_json(p_obj({{v}}))"
            return "Dict[str, Any]", "dict(p_obj({v}))"
        return "Any", "{v}"

    def answer_class(self, name: str, schema: Dict[str, Any], where: Optional[str] = None) -> None:
        if name in self.done:
            return
        self.done[name] = "dataclass"
        where = where or name
        required = set(schema.get("required", []))
        fields: List[Tuple[str, str, str, bool, str]] = []
        for prop, sub in schema["properties"].items():
            ann, parse = self.out_type(sub, f"{where}.{prop}")
            fields.append((prop, ann, parse, prop in required, self.doc_of(sub)))
        bases = [f"_h.{name}Helpers"] if f"{name}Helpers" in self.helpers else []
        items = schema["properties"].get("items", {})
        list_like = name.endswith("List") or set(schema["properties"]) == {"items"}
        if list_like and "items" in required and items.get("type") == "array":
            bases.append(f"ItemList[{self.out_type(items.get('items', {}), where + '.items[]')[0]}]")
        if where in self.top_level:
            if "request_id" in schema["properties"]:
                raise SystemExit(f"{name}: a field named request_id hides the answer's request id")
            bases.append("Result")
        bases.append("Model")
        lines = ["", "", "@dataclass(frozen=True)", f"class {name}({', '.join(bases)}):"]
        lines.append(f'    """{self.class_doc(schema, name)}"""')
        lines.append("")
        # required fields first (no default), then optional ones (default None), then raw
        ordered = [f for f in fields if f[3]] + [f for f in fields if not f[3]]
        for prop, ann, _parse, req, doc in ordered:
            attr = py_name(prop)
            if prop in SECRET_FIELDS:
                default = "" if req else ", default=None"
                lines.append(f"    {attr}: {ann if req else opt_of(ann)} = field(repr=False{default})")
            elif req:
                lines.append(f"    {attr}: {ann}")
            elif ann.startswith("List["):
                lines.append(f"    {attr}: {ann} = field(default_factory=list)")
            else:
                opt = ann if ann.startswith("Optional[") else f"Optional[{ann}]"
                lines.append(f"    {attr}: {opt} = None")
            if doc:
                lines.append(f'    """{doc}"""')
        lines.append("    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)")
        lines.append(
            '    """The JSON object as the server sent it (fields this SDK does not name included)."""'
        )
        lines.append("")
        lines.append("    @classmethod")
        lines.append(f"    def from_json(cls, d: Mapping[str, Any]) -> {name}:")
        lines.append("        return cls(")
        for prop, _ann, parse, req, _doc in ordered:
            attr = py_name(prop)
            getter = f'd["{prop}"]' if req else f'd.get("{prop}")'
            if req or parse.startswith("p_list(") or parse.startswith("p_opt("):
                lines.append(f"            {attr}={parse.format(v=getter)},")
            else:
                lines.append(f"            {attr}=p_opt({getter}, {fn(parse)}),")
        lines.append("            raw=p_raw(d),")
        lines.append("        )")
        self.classes.append("\n".join(lines))

    # ------------------------------------------------------------------ inputs

    def in_type(self, schema: Dict[str, Any], where: str) -> str:
        schema, nullable = self.split_null(schema)
        ann = self._in_type(schema, where)
        return f"Optional[{ann}]" if nullable else ann

    def _in_type(self, schema: Dict[str, Any], where: str) -> str:
        name = self.ref_name(schema)
        if name in DECIMAL_STRINGS:
            return "Union[Decimal, str]"
        if name:
            target = self.schemas[name]
            if target.get("type") == "object" and target.get("properties"):
                self.input_class(name, target)
                return name
            return self._in_type(target, name)
        for key in ("anyOf", "oneOf"):
            if key in schema:
                alts = sorted({self._in_type(a, where) for a in schema[key]})
                flat: List[str] = []
                for a in alts:
                    inner = a[len("Union[") : -1].split(", ") if a.startswith("Union[") else [a]
                    for x in inner:
                        if x not in flat:
                            flat.append(x)
                return flat[0] if len(flat) == 1 else f"Union[{', '.join(sorted(flat))}]"
        t = schema.get("type")
        if t == "string":
            fmt = schema.get("format")
            if fmt in ("date-time", "date"):
                return "Union[str, _dt.datetime, _dt.date]"
            return "str"
        if t == "integer":
            return "int"
        if t == "number":
            return "Union[Decimal, int, str]"
        if t == "boolean":
            return "bool"
        if t == "array":
            return f"List[{self.in_type(schema.get('items', {}), where + '[]')}]"
        if t == "object":
            if schema.get("properties"):
                cls = camel(where.replace("[]", "").replace(".", "_")) + "Input"
                self.input_class(cls, schema)
                return cls
            return "Dict[str, Any]"
        return "Any"

    def input_class(self, name: str, schema: Dict[str, Any]) -> None:
        if name in self.done:
            return
        self.done[name] = "typeddict"
        props = schema.get("properties", {})
        body = []
        for prop, sub in props.items():
            body.append((prop, self.in_type(sub, f"{name}.{prop}"), self.doc_of(sub)))
        if any(keyword.iskeyword(p) for p, _a, _d in body) or not body:
            inner = ", ".join(f'"{p}": {a}' for p, a, _d in body)
            doc = self.class_doc(schema, name)
            self.classes.append(f'\n\n{name} = TypedDict("{name}", {{{inner}}}, total=False)\n"""{doc}"""')
            return
        lines = [
            "",
            "",
            f"class {name}(TypedDict, total=False):",
            f'    """{self.class_doc(schema, name)}"""',
            "",
        ]
        for prop, ann, doc in body:
            lines.append(f"    {prop}: {ann}")
            if doc:
                lines.append(f'    """{doc}"""')
        self.classes.append("\n".join(lines))

    # ------------------------------------------------------------------ text

    @staticmethod
    def doc_of(schema: Dict[str, Any]) -> str:
        text = str(schema.get("description", "")).strip()
        return text.replace("\\", "\\\\").replace('"""', "'''")

    def class_doc(self, schema: Dict[str, Any], name: str) -> str:
        return self.doc_of(schema) or f"``{name}`` of the contract."

    # ------------------------------------------------------------------ driver

    def roles(self) -> Tuple[Set[str], Set[str]]:
        """(schemas a request body uses, schemas an answer uses), by name."""

        def refs(node: Any, out: Set[str]) -> None:
            if isinstance(node, dict):
                name = self.ref_name(node)
                if name and name not in out:
                    out.add(name)
                    refs(self.schemas[name], out)
                for v in node.values():
                    refs(v, out)
            elif isinstance(node, list):
                for v in node:
                    refs(v, out)

        inputs: Set[str] = set()
        outputs: Set[str] = set()
        self.top_level = set()
        for item in self.doc["paths"].values():
            for method, op in item.items():
                if not isinstance(op, dict) or method not in ("get", "post", "put", "patch", "delete"):
                    continue
                refs(op.get("requestBody", {}), inputs)
                for code, answer in op.get("responses", {}).items():
                    if str(code).startswith("2"):
                        refs(answer, outputs)
                        for media in answer.get("content", {}).values():
                            name = self.ref_name(media.get("schema", {}))
                            if name:
                                self.top_level.add(name)
        return inputs, outputs

    def run(self) -> str:
        inputs, outputs = self.roles()
        names = list(self.schemas)
        for name in names:
            s = self.schemas[name]
            if not (s.get("type") == "object" and s.get("properties")):
                continue
            if name in outputs:
                self.answer_class(SCHEMA_NAMES.get(name, name), s, name)
        for name in names:
            s = self.schemas[name]
            if name in inputs and s.get("type") == "object" and s.get("properties"):
                input_name = name if name not in self.done else name + "Input"
                self.input_class(input_name, s)
        exported = sorted(self.done)
        all_list = "\n".join(f'    "{n}",' for n in exported)
        tail = [f"\n\n{parent}.register({child})" for child, parent in SUBTYPES.items()]
        return HEADER + f"\n__all__ = [\n{all_list}\n]\n" + "\n".join(self.classes) + "".join(tail) + "\n"


def helper_names() -> Set[str]:
    if not HELPERS.is_file():
        return set()
    return set(re.findall(r"^class (\w+Helpers)\b", HELPERS.read_text("utf-8"), flags=re.M))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when the committed file is stale")
    parser.add_argument("--contract", type=Path, default=CONTRACT, help="the OpenAPI document")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="the module to write or check")
    args = parser.parse_args()
    contract: Path = args.contract
    output: Path = args.output
    doc = json.loads(contract.read_text("utf-8"))
    text = Gen(doc, helper_names()).run()
    if args.check:
        current = output.read_text("utf-8") if output.is_file() else ""
        if current != text:
            print(
                f"{output} is stale against {contract}: run python3 sdks/python/codegen/generate.py",
                file=sys.stderr,
            )
            return 1
        print(f"{output.name} is up to date with {contract.name}")
        return 0
    output.write_text(text, "utf-8")
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
