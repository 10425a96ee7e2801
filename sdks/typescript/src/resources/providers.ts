import type { EnterpriseAI, RequestOptions } from "../client.js";
import type { ProviderCatalog } from "../types.js";

/** `client.providers`: the local inference providers. */
export class Providers {
  #client: EnterpriseAI;

  /** @internal */
  constructor(client: EnterpriseAI) {
    this.#client = client;
  }

  /**
   * The local inference providers (`GET /v1/providers/catalog`): the shared deployments and the caller's
   * tenant's dedicated ones, each with its OpenAI-compatible `base_url`.
   *
   * Who: any tenant reader, platform_admin and usage_reporter.
   *
   * @example
   * const { items } = await client.providers.catalog();
   */
  catalog(options?: RequestOptions): Promise<ProviderCatalog> {
    return this.#client.request("GET", "/v1/providers/catalog", {}, options);
  }
}
