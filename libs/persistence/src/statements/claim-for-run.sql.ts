import { prepared } from '../sql';
import { jobPayload } from './job-payload.sql';

/**
 * A worker's claim of the rows it is about to run, as they come due: queued → running, the
 * attempt counted, a lease, and the worker's mark (`claimed_by`). Returns the claimed rows, and
 * (with `claimed` false) the queued rows among the ids that are not due by $3, with their run
 * time; every other id is stale for this claim (cancelled, finished, running elsewhere).
 *
 * $1 bigint[] ids · $2 timestamptz due by (the worker's now) ·
 * $3 timestamptz the lease end · $4 int the worker.
 *
 * Idempotent: a row this worker already claimed with this very lease (a claim whose reply was
 * lost, sent again) comes back as claimed, its attempt not counted twice. So a failed claim is
 * retried, never undone. Only that retry may match: no two claims (or renewals) of a worker
 * share a lease (Claimer.leaseFrom), else a second hint of a row ran it beside the first.
 *
 * Commits without waiting for the WAL flush (synchronous_commit off for this transaction;
 * ~10 ms → ~1 ms per commit here). Safe: if a crash loses the claim, the row is still queued,
 * as after a worker crash before it; a completion is always flushed, and flushing it flushes
 * every earlier claim, so no completion outlives its claim.
 *
 * A row whose attempts counter is full (32,767, a smallint) is stale here, not an error: one
 * overflowing row failed the whole statement, every tenant's rows batched with it (retries stop
 * at MAX_LIFETIME_ATTEMPTS, so only attempts released at shutdowns could get it there).
 *
 * `state::text = 'q'`, not `state = 'q'`: the ids are found through the primary key, never
 * through jobs_queued_due, whose estimate after a burst is a few dozen rows (the planner then
 * read every due queued row into a hash for each claim: 72 ms instead of 9 with 100,000 due).
 */
export const CLAIM_FOR_RUN = prepared('almanac_claim_for_run', `WITH claimed AS (
         UPDATE jobs j
            SET state = 'r', attempts = j.attempts + (j.state::text = 'q')::int, lease_until = $3, claimed_by = $4
           FROM unnest($1::bigint[]) AS t(id),
                (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit
          WHERE j.id = t.id
            AND ((j.state::text = 'q' AND j.run_at <= $2 AND j.attempts < 32767) OR (j.state::text = 'r' AND j.claimed_by = $4 AND j.lease_until = $3))
         RETURNING j.id, j.tenant_id, j.kind, j.key, ${jobPayload('j')} AS payload, j.attempts, j.max_attempts, j.trace_parent
       ), early AS (
         SELECT j.id, j.run_at
           FROM unnest($1::bigint[]) AS t(id) LEFT JOIN claimed c ON c.id = t.id JOIN jobs j ON j.id = t.id
          WHERE c.id IS NULL AND j.state::text = 'q' AND j.run_at > $2
       )
       SELECT id::text AS id, tenant_id, kind, key, payload, attempts, max_attempts, trace_parent, NULL::timestamptz AS run_at, true AS claimed FROM claimed
       UNION ALL
       SELECT id::text, NULL, NULL, NULL, NULL, NULL, NULL, NULL, run_at, false FROM early`);
