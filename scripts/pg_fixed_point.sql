-- Issue 18: does a fixed-point layout (bigint pairs) speed up the sparse load's rollup upsert? The same rows into
-- tables of eai.rollups' shape: numeric sums, bigint pairs, fewer indexes, a narrow key. Timings only (BENCHMARKS.md).
--   psql -q postgres://postgres@127.0.0.1:5432/postgres -f scripts/pg_fixed_point.sql
\timing on
DROP TABLE IF EXISTS r_num, r_fix;
CREATE TABLE r_num (gpu_id bigint, bucket_ms bigint, deployment_id text, tenant_id uuid, model text,
 first_ms bigint, last_ms bigint, samples bigint, est bigint,
 a numeric, b numeric, c numeric, d numeric, e numeric, f numeric,
 PRIMARY KEY (gpu_id, bucket_ms, deployment_id, tenant_id, model));
CREATE INDEX ON r_num (bucket_ms);
CREATE TABLE r_fix (gpu_id bigint, bucket_ms bigint, deployment_id text, tenant_id uuid, model text,
 first_ms bigint, last_ms bigint, samples bigint, est bigint,
 a_hi bigint, a_lo bigint, b_hi bigint, b_lo bigint, c_hi bigint, c_lo bigint, d_hi bigint, d_lo bigint, e_hi bigint, e_lo bigint, f_hi bigint, f_lo bigint,
 PRIMARY KEY (gpu_id, bucket_ms, deployment_id, tenant_id, model));
CREATE INDEX ON r_fix (bucket_ms);
-- sparse: 100 statements of 5,000 new rows each (500,000 rows)
DO $$ BEGIN FOR i IN 0..99 LOOP
 INSERT INTO r_num SELECT g % 1000, (i*5 + g/1000)*3600000, 'dep-' || (g%50), '00000000-0000-0000-0000-000000000001', 'm', 0, 0, 1, 0,
   3600.000000000 * (g%7+1)/7, 1234.567890123456789, 0, 288000.1234567891234, 2520000.123456789, 0 FROM generate_series(0,4999) g
 ON CONFLICT (gpu_id, bucket_ms, deployment_id, tenant_id, model) DO UPDATE SET samples = r_num.samples + excluded.samples,
 a = r_num.a + excluded.a, b = r_num.b + excluded.b, c = r_num.c + excluded.c, d = r_num.d + excluded.d, e = r_num.e + excluded.e, f = r_num.f + excluded.f;
END LOOP; END $$;
DO $$ BEGIN FOR i IN 0..99 LOOP
 INSERT INTO r_fix SELECT g % 1000, (i*5 + g/1000)*3600000, 'dep-' || (g%50), '00000000-0000-0000-0000-000000000001', 'm', 0, 0, 1, 0,
   0, 3600000000000000*(g%7+1)/7, 0, 1234567890123456789, 0,0, 0, 288000123456789123, 0, 2520000123456789000, 0, 0 FROM generate_series(0,4999) g
 ON CONFLICT (gpu_id, bucket_ms, deployment_id, tenant_id, model) DO UPDATE SET samples = r_fix.samples + excluded.samples,
 a_hi = r_fix.a_hi + excluded.a_hi + ((r_fix.a_lo + excluded.a_lo) >> 62), a_lo = (r_fix.a_lo + excluded.a_lo) & 4611686018427387903,
 b_hi = r_fix.b_hi + excluded.b_hi + ((r_fix.b_lo + excluded.b_lo) >> 62), b_lo = (r_fix.b_lo + excluded.b_lo) & 4611686018427387903,
 c_hi = r_fix.c_hi + excluded.c_hi + ((r_fix.c_lo + excluded.c_lo) >> 62), c_lo = (r_fix.c_lo + excluded.c_lo) & 4611686018427387903,
 d_hi = r_fix.d_hi + excluded.d_hi + ((r_fix.d_lo + excluded.d_lo) >> 62), d_lo = (r_fix.d_lo + excluded.d_lo) & 4611686018427387903,
 e_hi = r_fix.e_hi + excluded.e_hi + ((r_fix.e_lo + excluded.e_lo) >> 62), e_lo = (r_fix.e_lo + excluded.e_lo) & 4611686018427387903,
 f_hi = r_fix.f_hi + excluded.f_hi + ((r_fix.f_lo + excluded.f_lo) >> 62), f_lo = (r_fix.f_lo + excluded.f_lo) & 4611686018427387903;
END LOOP; END $$;
-- repeat as updates (dense case): same keys again
DO $$ BEGIN FOR i IN 0..19 LOOP
 INSERT INTO r_num SELECT g % 1000, (i*5 + g/1000)*3600000, 'dep-' || (g%50), '00000000-0000-0000-0000-000000000001', 'm', 0, 0, 1, 0,
   3600.000000000 * (g%7+1)/7, 1234.567890123456789, 0, 288000.1234567891234, 2520000.123456789, 0 FROM generate_series(0,4999) g
 ON CONFLICT (gpu_id, bucket_ms, deployment_id, tenant_id, model) DO UPDATE SET samples = r_num.samples + excluded.samples,
 a = r_num.a + excluded.a, b = r_num.b + excluded.b, c = r_num.c + excluded.c, d = r_num.d + excluded.d, e = r_num.e + excluded.e, f = r_num.f + excluded.f;
END LOOP; END $$;
DO $$ BEGIN FOR i IN 0..19 LOOP
 INSERT INTO r_fix SELECT g % 1000, (i*5 + g/1000)*3600000, 'dep-' || (g%50), '00000000-0000-0000-0000-000000000001', 'm', 0, 0, 1, 0,
   0, 3600000000000000*(g%7+1)/7, 0, 1234567890123456789, 0,0, 0, 288000123456789123, 0, 2520000123456789000, 0, 0 FROM generate_series(0,4999) g
 ON CONFLICT (gpu_id, bucket_ms, deployment_id, tenant_id, model) DO UPDATE SET samples = r_fix.samples + excluded.samples,
 a_hi = r_fix.a_hi + excluded.a_hi + ((r_fix.a_lo + excluded.a_lo) >> 62), a_lo = (r_fix.a_lo + excluded.a_lo) & 4611686018427387903,
 b_hi = r_fix.b_hi + excluded.b_hi + ((r_fix.b_lo + excluded.b_lo) >> 62), b_lo = (r_fix.b_lo + excluded.b_lo) & 4611686018427387903,
 c_hi = r_fix.c_hi + excluded.c_hi + ((r_fix.c_lo + excluded.c_lo) >> 62), c_lo = (r_fix.c_lo + excluded.c_lo) & 4611686018427387903,
 d_hi = r_fix.d_hi + excluded.d_hi + ((r_fix.d_lo + excluded.d_lo) >> 62), d_lo = (r_fix.d_lo + excluded.d_lo) & 4611686018427387903,
 e_hi = r_fix.e_hi + excluded.e_hi + ((r_fix.e_lo + excluded.e_lo) >> 62), e_lo = (r_fix.e_lo + excluded.e_lo) & 4611686018427387903,
 f_hi = r_fix.f_hi + excluded.f_hi + ((r_fix.f_lo + excluded.f_lo) >> 62), f_lo = (r_fix.f_lo + excluded.f_lo) & 4611686018427387903;
END LOOP; END $$;
SELECT pg_size_pretty(pg_total_relation_size('r_num')), pg_size_pretty(pg_total_relation_size('r_fix'));
DROP TABLE IF EXISTS r_a, r_b, r_c;
CREATE TABLE r_a (gpu_id bigint, bucket_ms bigint, deployment_id text, tenant_id uuid, model text,
 first_ms bigint, last_ms bigint, samples bigint, est bigint,
 a numeric, b numeric, c numeric, d numeric, e numeric, f numeric);
CREATE TABLE r_b (LIKE r_a, PRIMARY KEY (gpu_id, bucket_ms, deployment_id, tenant_id, model));
CREATE TABLE r_c (LIKE r_a, PRIMARY KEY (gpu_id, bucket_ms, deployment_id, tenant_id, model));
CREATE INDEX ON r_c (bucket_ms);
DO $$ BEGIN FOR i IN 0..99 LOOP
 INSERT INTO r_a SELECT g % 1000, (i*5 + g/1000)*3600000, 'dep-' || (g%50), '00000000-0000-0000-0000-000000000001', 'm', 0, 0, 1, 0,
   3600.000000000 * (g%7+1)/7, 1234.567890123456789, 0, 288000.1234567891234, 2520000.123456789, 0 FROM generate_series(0,4999) g;
END LOOP; END $$;
DO $$ BEGIN FOR i IN 0..99 LOOP
 INSERT INTO r_b SELECT g % 1000, (i*5 + g/1000)*3600000, 'dep-' || (g%50), '00000000-0000-0000-0000-000000000001', 'm', 0, 0, 1, 0,
   3600.000000000 * (g%7+1)/7, 1234.567890123456789, 0, 288000.1234567891234, 2520000.123456789, 0 FROM generate_series(0,4999) g;
END LOOP; END $$;
DO $$ BEGIN FOR i IN 0..99 LOOP
 INSERT INTO r_c SELECT g % 1000, (i*5 + g/1000)*3600000, 'dep-' || (g%50), '00000000-0000-0000-0000-000000000001', 'm', 0, 0, 1, 0,
   3600.000000000 * (g%7+1)/7, 1234.567890123456789, 0, 288000.1234567891234, 2520000.123456789, 0 FROM generate_series(0,4999) g;
END LOOP; END $$;
DROP TABLE IF EXISTS r_d;
CREATE TABLE r_d (series_id bigint, bucket_ms bigint, 
 first_ms bigint, last_ms bigint, samples bigint, est bigint,
 a numeric, b numeric, c numeric, d numeric, e numeric, f numeric, PRIMARY KEY (series_id, bucket_ms));
CREATE INDEX ON r_d (bucket_ms);
DO $$ BEGIN FOR i IN 0..99 LOOP
 INSERT INTO r_d SELECT g % 1000, (i*5 + g/1000)*3600000, 0, 0, 1, 0,
   3600.000000000 * (g%7+1)/7, 1234.567890123456789, 0, 288000.1234567891234, 2520000.123456789, 0 FROM generate_series(0,4999) g
 ON CONFLICT (series_id, bucket_ms) DO UPDATE SET samples = r_d.samples + excluded.samples,
 a = r_d.a + excluded.a, b = r_d.b + excluded.b, c = r_d.c + excluded.c, d = r_d.d + excluded.d, e = r_d.e + excluded.e, f = r_d.f + excluded.f;
END LOOP; END $$;
DROP TABLE r_a, r_b, r_c, r_d, r_num, r_fix;
