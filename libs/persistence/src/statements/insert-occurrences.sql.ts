/**
 * Inserts a schedule's occurrences as scheduled job rows; an occurrence already materialised
 * (same tenant and key) stays as it is. The affected-row count is the number inserted.
 *
 * With $7 true it also leaves out occurrences whose key retention retired (a schedule resumed
 * past its old rows' retention): the recurring sweep sends the batch again so after the plain
 * insert failed with AL001 (the jobs_refuse_retired_keys trigger), which failed the batch of
 * every tenant's schedules on every run. Not paid otherwise: the look-up by hash costs a random
 * index page per row, and a savepoint around every insert cost 11 % of the sweep's rate
 * (bench/promote.ts recurring part, 48,100 against 42,900 occurrences/s, two runs each).
 *
 * $1 int[] tenants · $2 text[] keys · $3 text[] kinds · $4 timestamptz[] run times ·
 * $5 jsonb[] payloads · $6 int2[] max attempts · $7 boolean leave retired keys out.
 */
export const INSERT_OCCURRENCES_SQL = `INSERT INTO jobs (tenant_id, key, kind, run_at, payload, max_attempts, state)
       SELECT t, k, kd, r, p, ma, 's' FROM unnest($1::int[], $2::text[], $3::text[], $4::timestamptz[], $5::jsonb[], $6::int2[])
           AS u(t, k, kd, r, p, ma)
        WHERE NOT $7::boolean OR NOT EXISTS (SELECT 1 FROM retired_keys rk WHERE rk.key_hash = hashtextextended(u.k, u.t))
       ON CONFLICT (tenant_id, key) DO NOTHING`;
