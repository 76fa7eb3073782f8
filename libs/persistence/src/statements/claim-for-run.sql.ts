/**
 * A worker's claim of the rows it is about to run: queued → running for every id due by $3, with
 * a lease, the attempt counted for rows already due ($2) and a `lost` history row for a counted
 * re-claim whose previous attempt left none. Returns the claimed rows and whether each was counted.
 *
 * $1 bigint[] ids · $2 timestamptz now · $3 timestamptz due by (now + the claim lead) ·
 * $4 int lease in ms · $5 text the error of a `lost` row.
 *
 * Commits without waiting for the WAL flush (synchronous_commit off for this one transaction;
 * measured ~10 ms → ~1 ms per commit here). Safe: if a crash loses the claim, the row is still
 * queued and is delivered again, as after a worker crash mid-handler. A completion is always
 * flushed, and flushing it flushes every earlier claim, so no completion outlives its claim.
 *
 * `state::text = 'q'`, not `state = 'q'`: the ids are found through the primary key, never
 * through jobs_queued_due. A burst's due rows (promoted or inserted queued since the last
 * ANALYZE, which at 10 M rows a 200,000-row burst never triggers) are estimated at a few dozen,
 * and the planner then read every due queued row into a hash for each claim of 500: 72 ms
 * instead of 9 with 100,000 due (bench/wal.ts), the claim's cost growing with the burst.
 */
export const CLAIM_FOR_RUN_SQL = `WITH claimed AS (
         UPDATE jobs j
            SET state = 'r', attempts = j.attempts + (j.run_at <= $2::timestamptz)::int,
                lease_until = $2::timestamptz + $4 * interval '1 millisecond'
           FROM unnest($1::bigint[]) AS t(id),
                (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit
          WHERE j.id = t.id AND j.state::text = 'q' AND j.run_at <= $3::timestamptz
         RETURNING j.id, j.tenant_id, j.kind, j.key, j.payload, j.attempts, j.max_attempts, j.run_at, j.lease_until,
                   j.run_at <= $2::timestamptz AS counted
       ), lost AS (
         INSERT INTO job_attempts (job_id, attempt, tenant_id, started_at, finished_at, outcome, error)
         SELECT id, attempts - 1, tenant_id, $2, $2, 'lost', $5 FROM claimed WHERE counted AND attempts > 1
         ON CONFLICT (job_id, attempt) DO NOTHING
       )
       SELECT id::text AS id, tenant_id, kind, key, payload, attempts, max_attempts, run_at, counted, lease_until FROM claimed`;
