import { RESERVED_NOW } from './find-retired-keys.sql';

/**
 * Inserts a schedule's occurrences as scheduled job rows; an occurrence already materialised
 * (same tenant and key) stays as it is. The affected-row count is the number inserted.
 *
 * With $7 true it also leaves out occurrences whose key retention retired (a schedule resumed
 * past its old rows' retention): the recurring sweep sends the batch again so after the plain
 * insert failed with AL001 (the jobs_refuse_retired_keys trigger), which failed the batch of
 * every tenant's schedules on every run. Not paid otherwise: the trigger already looks the keys
 * up, and the anti-join on every batch cost 9 % of the sweep's rate with no key retired
 * (bench/promote.ts recurring part, 2026-12-04, medians of 6: 35,700 against 32,500
 * occurrences/s); a savepoint around every insert cost 11 % (48,100 against 42,900, two runs).
 *
 * $1 int[] tenants · $2 text[] keys · $3 text[] kinds · $4 timestamptz[] run times ·
 * $5 jsonb[] payloads · $6 int2[] max attempts · $7 boolean leave retired keys out ·
 * $8 bigint[] payload versions (schedule_payloads) the rows point at instead of a payload of their own.
 */
export const INSERT_OCCURRENCES_SQL = `INSERT INTO jobs (tenant_id, key, kind, run_at, payload, max_attempts, state, payload_ref)
       SELECT t, k, kd, r, p, ma, 's', pr FROM unnest($1::int[], $2::text[], $3::text[], $4::timestamptz[], $5::jsonb[], $6::int2[], $8::bigint[])
           AS u(t, k, kd, r, p, ma, pr)
        WHERE NOT $7::boolean OR NOT EXISTS (SELECT 1 FROM retired_keys rk WHERE rk.tenant_id = u.t AND rk.key = u.k AND ${RESERVED_NOW})
       ON CONFLICT (tenant_id, key) DO NOTHING`;
