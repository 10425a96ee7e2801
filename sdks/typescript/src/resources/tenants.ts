import type { EnterpriseAI, RequestOptions } from "../client.js";
import type { Tenant, TenantCreate, TenantList } from "../types.js";
import type { WithRequestId } from "../util.js";

/** `client.tenants`: the registered tenants. */
export class Tenants {
  #client: EnterpriseAI;

  /** @internal */
  constructor(client: EnterpriseAI) {
    this.#client = client;
  }

  /**
   * Registers a tenant (`POST /v1/tenants`): a unique, immutable slug and a display name; give `id` to name a
   * tenant already seen in data by its uuid. A registered slug or id is a `ConflictError` (409).
   *
   * Who: platform_admin.
   *
   * @example
   * const acme = await client.tenants.create({ slug: "acme", name: "Acme Corp" });
   */
  create(body: TenantCreate, options?: RequestOptions): Promise<WithRequestId<Tenant>> {
    return this.#client._operation("createTenant", { body }, options);
  }

  /**
   * The registered tenants, by slug (`GET /v1/tenants`). A tenant key sees its own.
   *
   * Who: platform_admin, usage_reporter (all), tenant roles (their own).
   */
  list(options?: RequestOptions): Promise<WithRequestId<TenantList>> {
    return this.#client._operation("listTenants", {}, options);
  }

  /**
   * One tenant, by slug or id (`GET /v1/tenants/{key}`); `NotFoundError` if unknown (or another tenant's,
   * for a tenant key).
   *
   * @example
   * const acme = await client.tenants.get("acme");
   */
  get(slugOrId: string, options?: RequestOptions): Promise<WithRequestId<Tenant>> {
    return this.#client._operation("getTenant", { params: { key: slugOrId } }, options);
  }
}
