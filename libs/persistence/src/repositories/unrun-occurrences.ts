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
 * Deletes the occurrences that never started (scheduled or queued, no attempt), or with `dueAfter`
 * only those whose run time is after it, and says which nominal instant (from the key) was the
 * earliest removed, so the caller can move `next_run_at` back for the sweep to make them again.
 */
export async function removeNeverStartedOccurrences(
  tx: EntityManager,
  tenantId: number,
  scheduleId: string,
  dueAfter: Date | null,
): Promise<{ count: number; earliest: Date | null }> {
  const [lo, hi] = occurrenceKeyRange(scheduleId);
  const [row]: { n: number; earliest: Date | null }[] = await tx.query(
    `WITH gone AS (
       DELETE FROM jobs WHERE tenant_id = $1 AND key >= $2 AND key < $3 AND state IN ('s', 'q') AND attempts = 0
          AND ($4::timestamptz IS NULL OR run_at > $4) RETURNING key)
     SELECT count(*)::int AS n, min(substr(key, length($2) + 1)::timestamptz) AS earliest FROM gone`,
    [tenantId, lo, hi, dueAfter],
  );
  return { count: row.n, earliest: row.earliest };
}
