import { RELEASED_ATTEMPT_ERROR } from '@almanac/domain';

/**
 * running → queued for deliveries a worker gives back unfinished, guarded like
 * COMPLETE_ATTEMPTS_SQL, with a `released` history row for each counted attempt. A row claimed
 * ahead whose attempt was not counted yet goes back without a history row. Returns the rows
 * released.
 *
 * $1 bigint[] ids · $2 int2[] attempts · $3 timestamptz now · $4 text worker id ·
 * $5 timestamptz[] started (null: now) · $6 bool[] whether each attempt was counted.
 */
export const RELEASE_DELIVERIES_SQL = `WITH input AS (
         SELECT * FROM unnest($1::bigint[], $2::int2[], $5::timestamptz[], $6::bool[]) AS t(id, attempt, started_at, counted)
       ), released AS (
         UPDATE jobs j SET state = 'q', lease_until = NULL
           FROM input i
          WHERE j.id = i.id AND j.state = 'r' AND j.attempts = i.attempt - (NOT i.counted)::int
         RETURNING j.id, j.tenant_id, j.kind, j.run_at, j.attempts
       ), history AS (
         INSERT INTO job_attempts (job_id, attempt, tenant_id, started_at, finished_at, outcome, worker_id, error)
         SELECT r.id, r.attempts, r.tenant_id, COALESCE(i.started_at, $3), $3, 'released', $4,
                '${RELEASED_ATTEMPT_ERROR}'
           FROM released r JOIN input i ON i.id = r.id
          WHERE i.counted
         ON CONFLICT (job_id, attempt) DO NOTHING
       )
       SELECT id::text AS id, tenant_id, kind, run_at FROM released`;
