import type { EnterpriseAI, RequestOptions } from "../client.js";
import type { ApiKey, ApiKeyCreate, ApiKeyCreated, ApiKeyList, ApiKeyRotate, WhoAmI } from "../types.js";
import type { WithRequestId } from "../util.js";

/** `client.auth.apiKeys`: API keys. */
export class ApiKeys {
  #client: EnterpriseAI;

  /** @internal */
  constructor(client: EnterpriseAI) {
    this.#client = client;
  }

  /**
   * Creates an API key (`POST /v1/auth/api-keys`). Its secret (`key`) is in this answer only. Every role but
   * platform_admin, sampler and usage_reporter needs a `tenant_id`. Retried with the same `Idempotency-Key`.
   *
   * Who: platform_admin.
   *
   * @example
   * const { id, key } = await client.auth.apiKeys.create({ role: "finops", tenant_id: acme.id, name: "finops-acme" });
   */
  create(body: ApiKeyCreate, options?: RequestOptions): Promise<WithRequestId<ApiKeyCreated>> {
    return this.#client._operation("createApiKey", { body }, options);
  }

  /**
   * The keys, oldest first, never a secret (`GET /v1/auth/api-keys`).
   *
   * Who: platform_admin (all), tenant_admin (its tenant's).
   */
  list(options?: RequestOptions): Promise<WithRequestId<ApiKeyList>> {
    return this.#client._operation("listApiKeys", {}, options);
  }

  /**
   * Revokes a key (`DELETE /v1/auth/api-keys/{id}`): its next call gets 401. Idempotent.
   *
   * Who: platform_admin, tenant_admin (its tenant's keys).
   */
  revoke(id: string, options?: RequestOptions): Promise<WithRequestId<ApiKey>> {
    return this.#client._operation("revokeApiKey", { params: { id } }, options);
  }

  /**
   * Gives a key a new secret (`POST /v1/auth/api-keys/{id}/rotate`), in this answer only; the previous one keeps
   * working `grace_seconds` (default 0). A revoked key is a `ConflictError`. Retried with the same `Idempotency-Key`.
   *
   * Who: platform_admin, tenant_admin (its tenant's keys).
   */
  rotate(id: string, body: ApiKeyRotate = {}, options?: RequestOptions): Promise<WithRequestId<ApiKeyCreated>> {
    return this.#client._operation("rotateApiKey", { params: { id }, body }, options);
  }
}

/** `client.auth`: the caller's identity and API keys. */
export class Auth {
  /** API keys: create, list, revoke, rotate. */
  readonly apiKeys: ApiKeys;
  #client: EnterpriseAI;

  /** @internal */
  constructor(client: EnterpriseAI) {
    this.#client = client;
    this.apiKeys = new ApiKeys(client);
  }

  /**
   * The caller's identity (`GET /v1/auth/whoami`): key id, role, tenant, and the tenant it acts for.
   *
   * Who: any valid key.
   *
   * @example
   * const me = await client.auth.whoami(); // { key_id: "key_1", role: "platform_admin", ... }
   */
  whoami(options?: RequestOptions): Promise<WithRequestId<WhoAmI>> {
    return this.#client._operation("whoAmI", {}, options);
  }
}
