#!/usr/bin/env python3
"""Prints the suite's one table from the key=value results of scripts/bench.sh."""
import re, sys

vals = {}
for line in open(sys.argv[1]):
    if "=" in line:
        k, v = line.strip().split("=", 1)
        vals[k] = v
engine = open(sys.argv[2]).read() if len(sys.argv) > 2 else ""

def g(k, unit=""):
    v = vals.get(k)
    return f"{v}{unit}" if v is not None else "-"

def ratio(a, b):
    try:
        return f"{float(vals[a]) / float(vals[b]):.2f}"
    except (KeyError, ValueError, ZeroDivisionError):
        return "-"

rows = []
for b in ("sqlite", "postgres"):
    if not any(k.startswith(f"{b}.") for k in vals):
        continue
    ref = "reference_naive_insert_rows_per_second" if b == "sqlite" else "reference_copy_rows_per_second"
    rows.append((f"{b}: ingest over HTTP, durable + deduplicated", g(f"{b}.ingest_samples_per_second", " samples/s"),
                 f"{ratio(f'{b}.ingest_samples_per_second', f'{b}.{ref}')} x {ref.replace('reference_', '').replace('_rows_per_second', '')} ({g(f'{b}.{ref}', ' rows/s')})"))
    rows.append((f"{b}: ingest, an Idempotency-Key per batch", g(f"{b}.keys.ingest_samples_per_second", " samples/s"),
                 f"{ratio(f'{b}.keys.ingest_samples_per_second', f'{b}.ingest_samples_per_second')} x without keys"))
    rows.append((f"{b}: ingest vs serde_json parse of the same bodies", g(f"{b}.reference_serde_json_parse_samples_per_second", " samples/s"),
                 ratio(f"{b}.ingest_samples_per_second", f"{b}.reference_serde_json_parse_samples_per_second")))
    for d in ("1", "7", "30"):
        nocache = f"{b}.g1000.nocache.d{d}.allocation_p50_ms"
        note = (f"{ratio(f'{b}.g1000.d{d}.allocation_p50_ms', nocache)} x without the read cache ({g(nocache, ' ms')} p50); "
                f"first request {g(f'{b}.g1000.d{d}.allocation_first_ms', ' ms')}"
                if nocache in vals else "")
        rows.append((f"{b}: allocation, 1,000 GPUs, {d} day(s): p50 / p99",
                     f"{g(f'{b}.g1000.d{d}.allocation_p50_ms', ' ms')} / {g(f'{b}.g1000.d{d}.allocation_p99_ms', ' ms')}", note))
    # SPEC §13's reads of the same month beside its allocation (same run), and one anomaly round on the store.
    a = f"{b}.g1000.advice"
    if f"{a}.recommendations_p50_ms" in vals:
        for name, what in (("recommendations", "recommendations, 30 days"), ("forecast", "forecast of the month"),
                           ("anomalies", "anomalies listed, 30 days")):
            rows.append((f"{b}: {what}, 1,000 GPUs: p50 / p99",
                         f"{g(f'{a}.{name}_p50_ms', ' ms')} / {g(f'{a}.{name}_p99_ms', ' ms')}",
                         f"{ratio(f'{a}.{name}_p50_ms', f'{a}.allocation_p50_ms')} x the allocation of the 30 days "
                         f"({g(f'{a}.allocation_p50_ms', ' ms')} p50); first request {g(f'{a}.{name}_first_ms', ' ms')}"))
        rows.append((f"{b}: one anomaly round (`eai-gpu anomalies --check`), 1,000 GPUs", g(f"{a}.anomaly_round_seconds", " s"),
                     "28 days + 48 hours of group rollups read, judged and recorded"))
    if f"{b}.g1000.load_samples_per_second" in vals:
        rows.append((f"{b}: a month of 1,000 GPUs (hourly windows) loaded over HTTP, {g(f'{b}.g1000.load_concurrency')} streams",
                     g(f"{b}.g1000.load_samples_per_second", " samples/s"), f"{g(f'{b}.g1000.load_seconds', ' s')}; target >= 50 k samples/s"))
    # The gateway path (issue 42, part 4): reserve + commit pairs from one key (and from 8 keys of 8 tenants),
    # the target beside the figure.
    for gw, who in ((f"{b}.gateway.gateway_", "one tenant"), (f"{b}.gateway8.gateway_", "8 tenants")):
        if f"{gw}pairs_per_second" not in vals:
            continue
        rows.append((f"{b}: gateway reserve + commit, {g(gw + 'callers')} callers, {who}: pairs/s, pair p50 / p99",
                     f"{g(gw + 'pairs_per_second', ' pairs/s')}, {g(gw + 'pair_p50_ms', ' ms')} / {g(gw + 'pair_p99_ms', ' ms')}",
                     f"target >= 2,000 pairs/s, p99 < 25 ms; reserve p99 {g(gw + 'reserve_p99_ms', ' ms')}, commit p99 "
                     f"{g(gw + 'commit_p99_ms', ' ms')}; {g(gw + 'pairs')} pairs, refused {g(gw + 'refused')}, errors "
                     f"{g(gw + 'errors')}, spent {g(gw + 'budget_spent')} = committed {g(gw + 'budget_expected')}, "
                     f"over budget {g(gw + 'over_budget')}"))
    # Samples between stored neighbours (issue 42, part 2), beside the same number appended in order (same run).
    rp = f"{b}.replay.replay_"
    if f"{rp}in_order_samples_per_second" in vals:
        for name, what in (("newest_first", "a spool replayed newest first into a hole"), ("shuffled", "shuffled windows into a hole")):
            rows.append((f"{b}: {what}, {g(rp + 'gpus')} GPUs", g(f"{rp}{name}_samples_per_second", " samples/s"),
                         f"{g(f'{b}.replay.ratio_{name}_to_in_order')} x in order ({g(rp + 'in_order_samples_per_second', ' samples/s')}: "
                         f"{g(rp + 'in_order_first_samples_per_second')} before, {g(rp + 'in_order_second_samples_per_second')} after); target >= 0.5"))
    bigs = sorted({m.group(1) for k in vals for m in [re.match(rf"{b}\.g(\d+)\.load_samples", k)] if m and m.group(1) != "1000"})
    for n in bigs:
        rows.append((f"{b}: {n} GPUs, a month loaded over HTTP", g(f"{b}.g{n}.load_samples", " samples"),
                     f"{g(f'{b}.g{n}.load_seconds', ' s')}, {ratio(f'{b}.g{n}.load_samples', f'{b}.g{n}.load_seconds')} samples/s"))
        for d in ("1", "7", "30"):
            rows.append((f"{b}: allocation, {n} GPUs, {d} day(s): p50 / p99",
                         f"{g(f'{b}.g{n}.d{d}.allocation_p50_ms', ' ms')} / {g(f'{b}.g{n}.d{d}.allocation_p99_ms', ' ms')}",
                         f"first request {g(f'{b}.g{n}.d{d}.allocation_first_ms', ' ms')}"))
        sized = f"{b}.g{n}.sized.d30.allocation_p50_ms"
        if sized in vals:
            rows.append((f"{b}: allocation, {n} GPUs, a month, read cache sized to it: p50 / p99",
                         f"{vals[sized]} ms / {g(f'{b}.g{n}.sized.d30.allocation_p99_ms', ' ms')}",
                         f"{ratio(sized, f'{b}.g{n}.d30.allocation_p50_ms')} x the default cache's p50; first request "
                         f"{g(f'{b}.g{n}.sized.d30.allocation_first_ms', ' ms')}; server RSS {g(f'{b}.g{n}.sized.d30.server_rss_mib', ' MiB')}"))
        if f"{b}.g{n}.backfill_rows" in vals:
            rows.append((f"{b}: replica backfill into ClickHouse, {n} GPUs, a month", g(f"{b}.g{n}.backfill_rows_per_second", " rows/s"),
                         f"{g(f'{b}.g{n}.backfill_rows')} rows in {g(f'{b}.g{n}.backfill_seconds', ' s')} (`eai-gpu replica backfill`)"))
        for d in ("1", "7", "30"):
            k = f"{b}.g{n}.clickhouse.d{d}.allocation_p50_ms"
            if k in vals:
                rows.append((f"{b}: allocation from ClickHouse, {n} GPUs, {d} day(s): p50 / p99",
                             f"{vals[k]} ms / {g(f'{b}.g{n}.clickhouse.d{d}.allocation_p99_ms', ' ms')}",
                             f"{ratio(k, f'{b}.g{n}.d{d}.allocation_p50_ms')} x the primary's p50"))
    if f"{b}.mixed_ingest_p99_ms" not in vals:
        continue
    rows.append((f"{b}: mixed load, ingest p99 / allocation p99", f"{g(f'{b}.mixed_ingest_p99_ms', ' ms')} / {g(f'{b}.mixed_allocation_p99_ms', ' ms')}",
                 f"{g(f'{b}.mixed_samples_per_second')} samples/s for {g(f'{b}.mixed_seconds')} s, errors {g(f'{b}.mixed_errors')}, "
                 f"RSS {g(f'{b}.mixed_server_rss_mib_first')} -> {g(f'{b}.mixed_server_rss_mib_last')} MiB, peak {g(f'{b}.mixed_server_rss_mib_max_first_half')} in the first half / {g(f'{b}.mixed_server_rss_mib_max_second_half')} in the second"))
if "sqlite.store_file_bytes_per_sample" in vals:
    rows.append(("sqlite: bytes per raw sample (whole file / table)", f"{g('sqlite.store_file_bytes_per_sample')} / {g('sqlite.store_raw_table_bytes_per_sample')}", "target <= 60"))
    rows.append(("sqlite: bytes per rollup (one GPU-hour)", g("sqlite.store_rollup_bytes_per_rollup"), f"{g('sqlite.store_rollups')} rollups"))
m = re.search(r"allocate a month from rollups: min / p50 / max of 7 \| ([^|]+)\|", engine)
r = re.search(r"ratio allocate / reference \(p50\) \| ([^|]+)\|", engine)
if m:
    rows.append(("engine: a month of 1,000 GPUs from rollups (min / p50 / max)", m.group(1).strip(), f"{r.group(1).strip()} the decimal-sum reference" if r else ""))
gm = re.search(r"allocate the month from (\d+) deployment-hour groups \+ (\d+) hourly claims: min / p50 / max of 7 \| ([^|]+)\|", engine)
gr = re.search(r"ratio groups / GPU-hour rollups \(p50\) \| ([^|]+)\|", engine)
if gm:
    rows.append(("engine: the same month from group rollups + claims (min / p50 / max)", gm.group(3).strip(),
                 f"{gm.group(1)} groups, {gm.group(2)} claims; {gr.group(1).strip() if gr else '-'} x the GPU-hour path"))

# A month of the big fleet from ClickHouse, filled directly (parts chmonth and chcluster): the replicated groups'
# path beside the summed path and the text layout of older binaries, all measured in the same run.
for prefix, where in (("clickhouse", "a single ClickHouse"), ("clickhouse_cluster", "a ClickHouse cluster (2 x 2)")):
    for k in sorted(vals):
        m2 = re.fullmatch(rf"{prefix}\.g(\d+)\.clickhouse_month_total_p50_s", k)
        if not m2:
            continue
        n = m2.group(1)
        p = f"{prefix}.g{n}."
        rows.append((f"{n} GPUs, a month from {where}: p50 in turn / reads concurrent",
                     f"{g(p + 'clickhouse_month_total_p50_s', ' s')} / {g(p + 'clickhouse_month_concurrent_total_p50_s', ' s')}",
                     f"summed path {g(p + 'summed_month_total_p50_s', ' s')} ({g(p + 'speedup_vs_summed')} x), "
                     f"text layout {g(p + 'reference_text_layout_month_p50_s', ' s')} ({g(p + 'speedup_vs_text_layout')} x)"))

w = [max(len(x[i]) for x in rows + [("figure", "value", "reference / note")]) for i in range(3)]
print(f"| {'figure'.ljust(w[0])} | {'value'.ljust(w[1])} | {'reference / note'.ljust(w[2])} |")
print(f"|{'-' * (w[0] + 2)}|{'-' * (w[1] + 2)}|{'-' * (w[2] + 2)}|")
for a, b, c in rows:
    print(f"| {a.ljust(w[0])} | {b.ljust(w[1])} | {c.ljust(w[2])} |")
