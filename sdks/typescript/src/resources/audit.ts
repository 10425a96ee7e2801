import type { EnterpriseAI, RequestOptions } from "../client.js";
import type { AuditEvent, AuditEventList, AuditEventsQuery, AuditHead } from "../types.js";
import type { WithRequestId } from "../util.js";

/** `client.audit`: the audit hash chain. */
export class Audit {
  #client: EnterpriseAI;

  /** @internal */
  constructor(client: EnterpriseAI) {
    this.#client = client;
  }

  /**
   * Audit events with `seq > after`, oldest first, at most `limit` (1..1000, default 100)
   * (`GET /v1/audit/events`). Page with `after` = the last `seq` read, or use {@link Audit.iterate}.
   *
   * Who: platform_admin, auditor, security_officer (their tenant's).
   *
   * @example
   * const { items } = await client.audit.events({ after: 0, limit: 50 });
   */
  events(query: AuditEventsQuery = {}, options?: RequestOptions): Promise<WithRequestId<AuditEventList>> {
    return this.#client._operation("listAuditEvents", { query: { after: query.after, limit: query.limit } }, options);
  }

  /**
   * Every audit event with `seq > after`, page by page (`pageSize`, default 1000).
   *
   * @example
   * for await (const event of client.audit.iterate()) console.log(event.seq, event.action);
   */
  async *iterate(
    params: { after?: number; pageSize?: number } = {},
    options?: RequestOptions,
  ): AsyncGenerator<AuditEvent, void, undefined> {
    let after = params.after ?? 0;
    const limit = params.pageSize ?? 1000;
    for (;;) {
      const { items } = await this.events({ after, limit }, options);
      for (const e of items) yield e;
      const last = items[items.length - 1];
      if (items.length < limit || last === undefined) return;
      after = last.seq;
    }
  }

  /**
   * The chain's newest event: its `seq` and `hash` (`GET /v1/audit/head`), to anchor outside the database.
   *
   * Who: platform_admin.
   */
  head(options?: RequestOptions): Promise<WithRequestId<AuditHead>> {
    return this.#client._operation("getAuditHead", {}, options);
  }
}
