/**
 * Records how attempts ended: one guarded UPDATE of the jobs (running, same attempt) and the
 * upsert of their job_attempts rows, only for the jobs the update matched. Returns the ids applied.
 *
 * $1 bigint[] ids · $2 int2[] attempts · $3 "char"[] next states · $4 timestamptz[] next run
 * times (null: unchanged) · $5 jsonb[] results · $6 text[] errors · $7 int[] tenants ·
 * $8 text[] outcomes · $9 timestamptz[] started · $10 timestamptz[] finished · $11 text[] worker
 * ids · $12 timestamptz now (finished_at of a succeeded or dead job).
 */
export const COMPLETE_ATTEMPTS_SQL = `WITH input AS (
         SELECT * FROM unnest($1::bigint[], $2::int2[], $3::"char"[], $4::timestamptz[], $5::jsonb[], $6::text[],
                              $7::int[], $8::text[], $9::timestamptz[], $10::timestamptz[], $11::text[])
           AS t(id, attempt, state, run_at, result, error, tenant_id, outcome, started_at, finished_at, worker_id)
       ), done AS (
         UPDATE jobs j
            SET state = i.state,
                run_at = COALESCE(i.run_at, j.run_at),
                lease_until = NULL,
                finished_at = CASE WHEN i.state IN ('d', 'x') THEN $12::timestamptz END,
                result = i.result,
                last_error = i.error
           FROM input i
          WHERE j.id = i.id AND j.state = 'r' AND j.attempts = i.attempt
         RETURNING j.id
       ), history AS (
         INSERT INTO job_attempts (job_id, attempt, tenant_id, started_at, finished_at, outcome, worker_id, error, result)
         SELECT i.id, i.attempt, i.tenant_id, i.started_at, i.finished_at, i.outcome, i.worker_id, i.error, i.result
           FROM input i JOIN done d ON d.id = i.id
         ON CONFLICT (job_id, attempt) DO UPDATE
            SET started_at = EXCLUDED.started_at, finished_at = EXCLUDED.finished_at, outcome = EXCLUDED.outcome,
                worker_id = EXCLUDED.worker_id, error = EXCLUDED.error, result = EXCLUDED.result
       )
       SELECT id::text AS id FROM done`;
