import type { EntityManager } from 'typeorm';
import { occurrenceKeyRange, type RemovedOccurrences } from './schedule-view';

/**
 * A deleted schedule's occurrences that have not run: never-attempted ones are deleted, those
 * that already failed an attempt keep their history as `cancelled`.
 * The range predicate on `key` (COLLATE "C") is a scan of the unique (tenant_id, key) index.
 */
export async function removeUnrunOccurrences(tx: EntityManager, tenantId: number, scheduleId: string): Promise<RemovedOccurrences> {
  const [lo, hi] = occurrenceKeyRange(scheduleId);
  const deleted: [unknown[], number] = await tx.query(
    `DELETE FROM jobs WHERE tenant_id = $1 AND key >= $2 AND key < $3 AND state IN ('s', 'q') AND attempts = 0 RETURNING id`,
    [tenantId, lo, hi],
  );
  const cancelled: [unknown[], number] = await tx.query(
    `WITH old AS (
       SELECT id FROM jobs WHERE tenant_id = $1 AND key >= $2 AND key < $3 AND state IN ('s', 'q') FOR UPDATE)
     UPDATE jobs j SET state = 'c', finished_at = now() FROM old WHERE j.id = old.id
     RETURNING j.id`,
    [tenantId, lo, hi],
  );
  return { count: deleted[0].length + cancelled[0].length };
}

/**
 * What becomes of an occurrence moved by hand (a reschedule, one or in bulk: its run time is no
 * longer its key's instant) among those removed: `remove`d with the rest (a new timing replaces
 * them all); `keep` its time and values (an edit: deleted, it was made again at its key's instant
 * or, that instant past, skipped by the missed policy and never run); `cancel` it (a pause: its
 * key stays, so a resume does not make it again at the instant it was moved from).
 */
export type MovedOccurrences = 'remove' | 'keep' | 'cancel';

/**
 * Deletes the occurrences that never started (scheduled or queued, no attempt), or with `dueAfter`
 * only those whose run time is after it, but the ones moved by hand as `moved` says, and says
 * which nominal instant (from the key) was the earliest deleted, so the caller can move
 * `next_run_at` back for the sweep to make them again. `count`: those deleted or cancelled.
 */
export async function removeNeverStartedOccurrences(
  tx: EntityManager,
  tenantId: number,
  scheduleId: string,
  dueAfter: Date | null,
  moved: MovedOccurrences,
): Promise<{ count: number; earliest: Date | null }> {
  const [lo, hi] = occurrenceKeyRange(scheduleId);
  // Locked first, in id order, and judged on their latest versions: chosen by one snapshot, a row a
  // reschedule moved while this waited for it was neither deleted (re-checked, no longer at its
  // instant) nor cancelled (not chosen), and ran while its schedule was paused.
  const [row]: { n: number; earliest: Date | null }[] = await tx.query(
    `WITH unrun AS (
       SELECT id, key, run_at = substr(key, length($2) + 1)::timestamptz AS at_its_instant FROM jobs
        WHERE tenant_id = $1 AND key >= $2 AND key < $3 AND state IN ('s', 'q') AND attempts = 0 AND ($4::timestamptz IS NULL OR run_at > $4)
        ORDER BY id FOR UPDATE
     ), gone AS (
       DELETE FROM jobs j USING unrun u WHERE j.id = u.id AND ($5 = 'remove' OR u.at_its_instant) RETURNING u.key
     ), held AS (
       UPDATE jobs j SET state = 'c', finished_at = now() FROM unrun u WHERE j.id = u.id AND $5 = 'cancel' AND NOT u.at_its_instant RETURNING 1
     )
     SELECT (SELECT count(*) FROM gone)::int + (SELECT count(*) FROM held)::int AS n,
            (SELECT min(substr(key, length($2) + 1)::timestamptz) FROM gone) AS earliest`,
    [tenantId, lo, hi, dueAfter, moved],
  );
  return { count: row.n, earliest: row.earliest };
}
