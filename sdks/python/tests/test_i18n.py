"""``locale="fr"``: the exception's ``message`` is the server's French one; ``message_i18n`` has both."""

from __future__ import annotations

import pytest

from enterprise_ai import AsyncEnterpriseAI, AuthenticationError, EnterpriseAI, NotFoundError, ValidationError

from _server import EaiServer


def test_french_messages(server: EaiServer) -> None:
    with EnterpriseAI(base_url=server.url, api_key=server.admin_key, locale="fr") as fr:
        with pytest.raises(NotFoundError) as nf:
            fr.tenants.get("inconnu")
        assert nf.value.message == "Le tenant `inconnu` n'existe pas."
        assert nf.value.message == nf.value.message_i18n["fr"]
        assert nf.value.message_i18n["en"] == "The tenant `inconnu` does not exist."

        with pytest.raises(ValidationError) as ve:
            fr.finops.create_allocation_policy({"name": "local-gpu-default", "deployment_pattern": "*"})
        assert ve.value.message.startswith("1 champ(s) invalide(s)")
        assert ve.value.message == ve.value.message_i18n["fr"] != ve.value.message_i18n["en"]
        assert ve.value.fields == ["gpu_hourly_cost"]

    with EnterpriseAI(base_url=server.url, api_key="eai_live_" + "z" * 40, locale="fr", max_retries=0) as bad:
        with pytest.raises(AuthenticationError) as au:
            bad.auth.whoami()
        assert au.value.message.startswith("Clé d'API absente, inconnue ou révoquée")


def test_english_by_default_and_per_client(server: EaiServer) -> None:
    with EnterpriseAI(base_url=server.url, api_key=server.admin_key) as en:
        with pytest.raises(NotFoundError) as nf:
            en.tenants.get("unknown")
        assert nf.value.message == "The tenant `unknown` does not exist."
        with pytest.raises(NotFoundError) as nf_fr:
            en.with_options(locale="fr").tenants.get("unknown")
        assert nf_fr.value.message == "Le tenant `unknown` n'existe pas."


async def test_french_async(server: EaiServer) -> None:
    async with AsyncEnterpriseAI(base_url=server.url, api_key=server.admin_key, locale="fr") as fr:
        with pytest.raises(NotFoundError) as nf:
            await fr.finops.disable_allocation_policy("alp_424242")
    assert nf.value.message == "La politique d'allocation `alp_424242` n'existe pas."
