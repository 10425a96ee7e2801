#!/usr/bin/env python3
"""References for the SQLite ingest figure, measured in the same run as it.

  bench_sqlite_reference.py STORE.db ROWS.csv

Prints key=value lines: the store's bytes per raw sample and per rollup, and the rate of a naive durable
insert of the same rows (TEXT primary key, WAL, synchronous=FULL, one transaction per 5,000 rows).
"""
import csv, os, sqlite3, sys, tempfile, time

store, rows_csv = sys.argv[1], sys.argv[2]
con = sqlite3.connect(store)
con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
samples = con.execute("SELECT count(*) FROM gpu_samples").fetchone()[0]
rollups = con.execute("SELECT count(*) FROM rollups").fetchone()[0]
size = os.path.getsize(store)
print(f"store_samples={samples}")
print(f"store_rollups={rollups}")
print(f"store_file_bytes_per_sample={size / max(samples, 1):.1f}")
try:
    per = dict(con.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall())
    print(f"store_raw_table_bytes_per_sample={per.get('gpu_samples', 0) / max(samples, 1):.1f}")
    print(f"store_rollup_bytes_per_rollup={per.get('rollups', 0) / max(rollups, 1):.1f}")
except sqlite3.OperationalError:
    pass  # this sqlite3 build has no dbstat
con.close()

rows = list(csv.reader(open(rows_csv)))
with tempfile.TemporaryDirectory() as d:
    ref = sqlite3.connect(os.path.join(d, "ref.db"), isolation_level=None)
    ref.execute("PRAGMA journal_mode=WAL")
    ref.execute("PRAGMA synchronous=FULL")
    ref.execute("CREATE TABLE s (id TEXT PRIMARY KEY, deployment TEXT, utilization TEXT, memory TEXT, power TEXT)")
    t = time.perf_counter()
    for i in range(0, len(rows), 5000):
        ref.execute("BEGIN")
        for r in rows[i:i + 5000]:
            ref.execute("INSERT OR IGNORE INTO s VALUES (?,?,?,?,?)", (r[0] + "@" + r[1], r[2], r[3], r[4], r[5]))
        ref.execute("COMMIT")
    secs = time.perf_counter() - t
print(f"reference_naive_insert_rows_per_second={len(rows) / secs:.0f}")
