import { prepared } from '../sql';

/**
 * Records how attempts ended: one guarded UPDATE of the jobs (running, same attempt) and the
 * insert of their job_attempts rows, only for the jobs the update matched. Returns the ids applied,
 * and those this very record was already written for: a resend after a commit whose reply was
 * lost is its own write, not a stale one (its retry still gets its hint). Only the rows the update
 * missed are looked up in job_attempts, by its primary key.
 * A plain insert: an attempt's history row is written once, by whichever of completion, release
 * and rescue moves the row out of `running` under that attempt (each is guarded by it), and the
 * next claim counts a new attempt. A `snoozed` attempt adds one to max_attempts, so it spends
 * none of the job's (attemptRecord stops snoozing at MAX_LIFETIME_ATTEMPTS, far below the
 * smallint's 32,767). ON CONFLICT's speculative insert cost 2.8 against 1.6 µs a row.
 *
 * $1 bigint[] ids · $2 int2[] attempts · $3 "char"[] next states · $4 float8[] next run
 * times, epoch ms (null: unchanged) · $5 jsonb[] results · $6 text[] errors · $7 int[] tenants ·
 * $8 text[] outcomes · $9 float8[] started, epoch ms · $10 float8[] finished, epoch ms ·
 * $11 text[] worker ids · $12 timestamptz now (finished_at of a succeeded or dead job).
 */
export const COMPLETE_ATTEMPTS = prepared('almanac_complete_attempts', `WITH input AS (
         SELECT t.id, t.attempt, t.state, to_timestamp(t.run_ms / 1000.0) AS run_at, t.result, t.error, t.tenant_id, t.outcome,
                to_timestamp(t.started_ms / 1000.0) AS started_at, to_timestamp(t.finished_ms / 1000.0) AS finished_at, t.worker_id
           FROM unnest($1::bigint[], $2::int2[], $3::"char"[], $4::float8[], $5::jsonb[], $6::text[],
                       $7::int[], $8::text[], $9::float8[], $10::float8[], $11::text[])
             AS t(id, attempt, state, run_ms, result, error, tenant_id, outcome, started_ms, finished_ms, worker_id)
       ), done AS (
         UPDATE jobs j
            SET state = i.state,
                run_at = COALESCE(i.run_at, j.run_at),
                max_attempts = CASE WHEN i.outcome = 'snoozed' THEN j.max_attempts + 1 ELSE j.max_attempts END,
                lease_until = NULL,
                claimed_by = NULL,
                finished_at = CASE WHEN i.state IN ('d', 'x') THEN $12::timestamptz END,
                result = i.result,
                last_error = i.error
           FROM input i
          WHERE j.id = i.id AND j.state::text = 'r' AND j.attempts = i.attempt
         RETURNING j.id
       ), history AS (
         INSERT INTO job_attempts (job_id, attempt, tenant_id, started_at, finished_at, outcome, worker_id, error, result)
         SELECT i.id, i.attempt, i.tenant_id, i.started_at, i.finished_at, i.outcome, i.worker_id, i.error, i.result
           FROM input i JOIN done d ON d.id = i.id
       ), resent AS (
         SELECT i.id FROM input i
          WHERE i.id NOT IN (SELECT id FROM done)
            AND (SELECT a.worker_id = i.worker_id AND a.outcome = i.outcome AND a.finished_at = i.finished_at
                   FROM job_attempts a WHERE a.job_id = i.id AND a.attempt = i.attempt)
       )
       SELECT id::text AS id FROM done UNION ALL SELECT id::text FROM resent`);
