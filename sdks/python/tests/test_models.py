"""The models generated from ``contracts/v1/openapi.json``: up to date, one class per schema an answer uses,
no float anywhere, ``raw`` kept, unknown fields harmless, the request id out of equality and of the dict
form."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import typing
from decimal import Decimal
from pathlib import Path
from typing import Any, Dict, Set

import enterprise_ai
from enterprise_ai import _models
from enterprise_ai._model_runtime import Model, Result

from _server import REPO_ROOT

SDK = Path(__file__).resolve().parents[1]
GENERATOR = SDK / "codegen" / "generate.py"
CONTRACT_PATH = REPO_ROOT / "contracts" / "v1" / "openapi.json"
CONTRACT: Dict[str, Any] = json.loads(CONTRACT_PATH.read_text("utf-8"))


def generate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GENERATOR), *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_the_committed_models_are_up_to_date() -> None:
    done = generate("--check")
    assert done.returncode == 0, done.stderr


def test_a_changed_contract_makes_them_stale(tmp_path: Path) -> None:
    doc = json.loads(CONTRACT_PATH.read_text("utf-8"))
    doc["components"]["schemas"]["Tenant"]["properties"]["colour"] = {"type": "string"}
    changed = tmp_path / "openapi.json"
    changed.write_text(json.dumps(doc), "utf-8")
    stale = generate("--check", "--contract", str(changed))
    assert stale.returncode == 1 and "stale" in stale.stderr
    out = tmp_path / "_models.py"
    assert generate("--contract", str(changed), "--output", str(out)).returncode == 0
    text = out.read_text("utf-8")
    assert "    colour: Optional[str] = None" in text
    assert generate("--check", "--contract", str(changed), "--output", str(out)).returncode == 0


def _answer_schemas() -> Set[str]:
    """The schemas an operation's 2xx answer names directly."""
    out: Set[str] = set()
    for item in CONTRACT["paths"].values():
        for op in item.values():
            for code, answer in op.get("responses", {}).items():
                if str(code).startswith("2"):
                    for media in answer.get("content", {}).values():
                        ref = media.get("schema", {}).get("$ref", "")
                        if ref.startswith("#/components/schemas/"):
                            out.add(ref.rsplit("/", 1)[1])
    return out


def test_every_answer_schema_has_its_model_and_a_request_id() -> None:
    names = {"ProviderCatalog": "Catalog"}
    for schema in _answer_schemas():
        s = CONTRACT["components"]["schemas"][schema]
        if s.get("type") != "object" or not s.get("properties"):
            continue
        cls: type = getattr(_models, names.get(schema, schema))
        assert dataclasses.is_dataclass(cls) and issubclass(cls, Result), schema
        fields = {f.name.rstrip("_") for f in dataclasses.fields(cls)} - {"raw"}
        assert fields == set(s["properties"]), (schema, fields ^ set(s["properties"]))


def _no_float(hint: Any, where: str) -> None:
    assert hint is not float, where
    for arg in typing.get_args(hint):
        _no_float(arg, where)


def test_no_float_in_any_model() -> None:
    checked = 0
    for name in _models.__all__:
        cls = getattr(_models, name)
        hints = typing.get_type_hints(cls)
        for field_name, hint in hints.items():
            _no_float(hint, f"{name}.{field_name}")
            checked += 1
    assert checked > 300


def test_money_and_quantities_are_exact_and_unknown_fields_kept() -> None:
    row = _models.AllocationItem.from_json(
        {
            "tenant_id": "8f0c2a4e-0000-4000-8000-000000000001",
            "deployment_id": "d",
            "gpu_seconds": Decimal("0.1"),
            "gpu_memory_gb_seconds": 3,
            "energy_wh": "1.0000",
            "allocated": {"amount": "412.70", "currency": "EUR"},
            "policy_id": "alp_1",
            "a_field_of_tomorrow": {"x": 1},
        }
    )
    assert row.allocated == enterprise_ai.Money(amount=Decimal("412.70"), currency="EUR")
    assert row.gpu_seconds == Decimal("0.1") and isinstance(row.gpu_memory_gb_seconds, Decimal)
    assert row.raw["a_field_of_tomorrow"] == {"x": 1}
    assert isinstance(row, Model) and not isinstance(row, Result)


def test_the_request_id_is_out_of_equality_and_dict_form() -> None:
    d = {"id": "8f0c2a4e-0000-4000-8000-000000000001", "slug": "acme", "name": "Acme"}
    a = enterprise_ai.Tenant.from_json(d)
    b = enterprise_ai.Tenant.from_json(d)
    a._set_request_id("req-1")
    assert a.request_id == "req-1" and b.request_id is None and a == b
    assert "request_id" not in dataclasses.asdict(a) and "req-1" not in repr(a)


def test_instants_are_timezone_aware() -> None:
    listing = enterprise_ai.TokenCostList.from_json(
        {
            "from": "2026-10-01T10:00:00+02:00",
            "to": "2026-10-02T00:00:00Z",
            "basis": "allocation",
            "aggregate": "deployment",
            "items": [],
        }
    )
    assert listing.from_.utcoffset() is not None and listing.to.utcoffset() is not None
    assert listing.from_.isoformat() == "2026-10-01T10:00:00+02:00" and len(listing) == 0


def test_a_new_key_secret_is_never_in_repr() -> None:
    assert "key" in {f.name for f in dataclasses.fields(enterprise_ai.ApiKeyCreated)}
    field = next(f for f in dataclasses.fields(enterprise_ai.ApiKeyCreated) if f.name == "key")
    assert field.repr is False
    assert issubclass(enterprise_ai.ApiKeyCreated, enterprise_ai.ApiKey)
