import type { UsageEvent, UsageEventInput } from "./types.js";
import { isoInstant, randomUUID } from "./util.js";

/** @internal An event as sent: `event_id` and `schema_version` chosen, `occurred_at` a string. Not mutating. */
export function normalizeEvent(e: UsageEventInput): UsageEvent {
  const out = { ...e } as Record<string, unknown>;
  if (out.event_id === undefined || out.event_id === null) out.event_id = randomUUID();
  if (out.schema_version === undefined || out.schema_version === null) out.schema_version = "1.0";
  if (e.occurred_at instanceof Date) out.occurred_at = isoInstant(e.occurred_at);
  return out as unknown as UsageEvent;
}
