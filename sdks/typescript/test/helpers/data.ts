import { randomBytes } from "node:crypto";
import type { GpuSample, UsageEventInput } from "@enterprise-ai/sdk";

/** A short unique suffix for slugs and deployment ids. */
export function uniq(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString("hex")}`;
}

/** A valid GPU sample (as in the server's own tests): 15 s window ending at `end`. */
export function sample(p: {
  gpu: string;
  deployment: string;
  end?: Date | undefined;
  tenantId?: string | undefined;
  power?: number;
  node?: string;
}): GpuSample {
  const s: GpuSample = {
    node: p.node ?? "gpu-node-3",
    gpu_uuid: p.gpu,
    model: "H100-80GB",
    namespace: "eai-inference",
    pod: `${p.deployment}-0`,
    deployment_id: p.deployment,
    window_seconds: 15,
    utilization: 0.82,
    memory_used_gb: 61.2,
    power_w: p.power ?? 512,
  };
  if (p.end) s.timestamp = p.end.toISOString();
  if (p.tenantId) s.tenant_id = p.tenantId;
  return s;
}

/** The latest 15-second boundary at least `agoMs` in the past. */
export function alignedPast(agoMs: number): Date {
  const t = Date.now() - agoMs;
  return new Date(Math.floor(t / 15_000) * 15_000);
}

/** The start of the UTC hour `hoursAgo` hours before the current one. */
export function hourStart(hoursAgo: number): Date {
  const h = Math.floor(Date.now() / 3_600_000) - hoursAgo;
  return new Date(h * 3_600_000);
}

/** `count` consecutive 15 s samples of one GPU, the last ending at `lastEnd`. */
export function series(gpu: string, deployment: string, lastEnd: Date, count: number, tenantId?: string): GpuSample[] {
  const out: GpuSample[] = [];
  const last = lastEnd.getTime();
  for (let i = count - 1; i >= 0; i--) {
    out.push(sample({ gpu, deployment, end: new Date(last - i * 15_000), tenantId }));
  }
  return out;
}

/** The 240 samples of one GPU covering the hour that starts at `hour`. */
export function hourOfSamples(gpu: string, deployment: string, hour: Date, tenantId?: string): GpuSample[] {
  return series(gpu, deployment, new Date(hour.getTime() + 3_600_000), 240, tenantId);
}

/** A usage event without id (the SDK picks one). */
export function usageEvent(p: {
  deployment: string;
  at: Date;
  tenantId?: string;
  tokensIn?: number;
  tokensOut?: number;
}): UsageEventInput {
  const e: UsageEventInput = {
    usage_type: "llm_tokens",
    source: "gateway",
    occurred_at: p.at.toISOString(),
    deployment_id: p.deployment,
    model: { provider: "local", name: "llama-70b-local" },
    units: { tokens_in: p.tokensIn ?? 7000, tokens_out: p.tokensOut ?? 1200 },
  };
  if (p.tenantId) e.tenant_id = p.tenantId;
  return e;
}

/** The worked example's policy (2.10 EUR/GPU-hour, 18 % overhead, energy at 0.21 with PUE 1.4), from 2020. */
export const WORKED_EXAMPLE_POLICY = {
  name: "local-gpu-default",
  deployment_pattern: "*",
  currency: "EUR",
  gpu_hourly_cost: "2.10",
  overhead_pct: "18",
  energy_kwh_price: "0.21",
  pue: "1.4",
  effective_from: "2020-01-01",
} as const;
