/**
 * Inserts a schedule's occurrences as scheduled job rows; an occurrence already materialised
 * (same tenant and key) stays as it is. The affected-row count is the number inserted.
 *
 * $1 int[] tenants · $2 text[] keys · $3 text[] kinds · $4 timestamptz[] run times ·
 * $5 jsonb[] payloads · $6 int2[] max attempts.
 */
export const INSERT_OCCURRENCES_SQL = `INSERT INTO jobs (tenant_id, key, kind, run_at, payload, max_attempts, state)
       SELECT t, k, kd, r, p, ma, 's' FROM unnest($1::int[], $2::text[], $3::text[], $4::timestamptz[], $5::jsonb[], $6::int2[])
           AS u(t, k, kd, r, p, ma)
       ON CONFLICT (tenant_id, key) DO NOTHING`;
