/**
 * Counts the attempt of rows claimed ahead of their run time as their handlers start, guarded by
 * state, attempt and the claim's lease (idempotent: a row already counted comes back unchanged),
 * with a `lost` history row for a previous attempt that left none. Returns the ids counted.
 * Commits without the WAL flush, like CLAIM_FOR_RUN_SQL: the completion's flush covers it.
 *
 * $1 bigint[] ids · $2 int2[] attempts · $3 timestamptz[] the claims' leases · $4 timestamptz now ·
 * $5 text the error of a `lost` row.
 */
export const START_CLAIMED_SQL = `WITH started AS (
         UPDATE jobs j SET attempts = t.attempt
           FROM unnest($1::bigint[], $2::int2[], $3::timestamptz[]) AS t(id, attempt, lease_until),
                (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit
          WHERE j.id = t.id AND j.state = 'r' AND j.attempts IN (t.attempt - 1, t.attempt) AND j.lease_until = t.lease_until
         RETURNING j.id, j.attempts, j.tenant_id
       ), lost AS (
         INSERT INTO job_attempts (job_id, attempt, tenant_id, started_at, finished_at, outcome, error)
         SELECT id, attempts - 1, tenant_id, $4, $4, 'lost', $5 FROM started WHERE attempts > 1
         ON CONFLICT (job_id, attempt) DO NOTHING
       )
       SELECT id::text AS id FROM started`;
