import type { EnterpriseAI, RequestOptions } from "../client.js";
import type { Provider, ProviderCatalog, ProviderCreate } from "../types.js";
import type { WithRequestId } from "../util.js";

/** `client.providers`: the local inference providers. */
export class Providers {
  #client: EnterpriseAI;

  /** @internal */
  constructor(client: EnterpriseAI) {
    this.#client = client;
  }

  /**
   * The local inference providers (`GET /v1/providers/catalog`): the shared deployments and the caller's
   * tenant's dedicated ones, each with its OpenAI-compatible `base_url`, its `models` and its `pricing`: the
   * cost per million tokens over the last closed month (decimal strings; null when it served no token then).
   *
   * Who: any tenant reader, platform_admin and usage_reporter.
   *
   * @example
   * const { items } = await client.providers.catalog();
   */
  catalog(options?: RequestOptions): Promise<WithRequestId<ProviderCatalog>> {
    return this.#client._operation("getProvidersCatalog", {}, options);
  }

  /**
   * Registers a deployment's OpenAI-compatible endpoint (`POST /v1/providers`); a new registration of a
   * deployment replaces the previous one. With `verify` (the default) the server first calls
   * `GET {base_url}/models` and refuses a URL that lists no model (`ValidationError`, field `base_url`);
   * `verify: false` registers it unconfirmed (`discovery: "config"`).
   *
   * Who: platform_admin.
   *
   * @example
   * const p = await client.providers.register({
   *   deployment_id: "vllm-llama-70b",
   *   base_url: "http://vllm-llama-70b.ai.svc:8000/v1",
   *   label: "Llama 3.1 70B",
   * });
   * p.discovery; // "api"
   */
  register(body: ProviderCreate, options?: RequestOptions): Promise<WithRequestId<Provider>> {
    // Safe to retry: registering a deployment again replaces its registration.
    return this.#client._operation("registerProvider", { body }, options);
  }
}
