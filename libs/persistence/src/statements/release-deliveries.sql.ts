import { RELEASED_ATTEMPT_ERROR } from '@almanac/domain';

/**
 * running → queued for attempts a worker gives back unfinished (its shutdown), guarded like
 * COMPLETE_ATTEMPTS, with a `released` history row each: the attempt counts, its handler
 * did start. A row whose attempts counter is full (32,767) goes dead instead: no claim could
 * take it again. Returns the rows released.
 *
 * $1 bigint[] ids · $2 int2[] attempts · $3 timestamptz now · $4 text worker name ·
 * $5 timestamptz[] handler starts.
 */
export const RELEASE_DELIVERIES_SQL = `WITH input AS (
         SELECT * FROM unnest($1::bigint[], $2::int2[], $5::timestamptz[]) AS t(id, attempt, started_at)
       ), released AS (
         UPDATE jobs j SET state = CASE WHEN j.attempts >= 32767 THEN 'x' ELSE 'q' END::"char", lease_until = NULL, claimed_by = NULL,
                finished_at = CASE WHEN j.attempts >= 32767 THEN $3::timestamptz END,
                last_error = CASE WHEN j.attempts >= 32767 THEN 'released with its attempts counter full (32,767)' ELSE j.last_error END
           FROM input i
          WHERE j.id = i.id AND j.state::text = 'r' AND j.attempts = i.attempt
         RETURNING j.id, j.tenant_id, j.kind, j.run_at, j.attempts
       ), history AS (
         INSERT INTO job_attempts (job_id, attempt, tenant_id, started_at, finished_at, outcome, worker_id, error)
         SELECT r.id, r.attempts, r.tenant_id, i.started_at, $3, 'released', $4, '${RELEASED_ATTEMPT_ERROR}'
           FROM released r JOIN input i ON i.id = r.id
         ON CONFLICT (job_id, attempt) DO NOTHING
       )
       SELECT id::text AS id, tenant_id, kind, run_at FROM released`;
