import type { Db } from '../sql';
import { inIdOrder } from '../lock-order';
import { sql } from '../sql';

/**
 * Rows committed as `queued` whose enqueue failed (Redis down or slow) go back to `scheduled`, so
 * the promoter's sweeps publish them again. Guarded on `queued` and the run time that was
 * enqueued: a row a worker already claimed, or one rescheduled meanwhile, is left alone. Used by
 * ingest (the API) and by promotion alike. Returns how many rows went back.
 *
 * $1 bigint[] ids · $2 timestamptz[] the run times that were enqueued.
 */
export const DEMOTE_TO_SCHEDULED_SQL = `UPDATE jobs j SET state = 's'
       FROM unnest($1::bigint[], $2::timestamptz[]) AS u(id, run_at)
      WHERE j.id = u.id AND j.state::text = 'q' AND j.run_at = u.run_at
     RETURNING j.id`;

export async function demoteToScheduled(db: Db, unordered: readonly { id: string; runAt: Date }[]): Promise<number> {
  if (unordered.length === 0) return 0;
  const items = inIdOrder(unordered, (i) => i.id);
  const { rows } = await sql(db, DEMOTE_TO_SCHEDULED_SQL, [items.map((i) => i.id), items.map((i) => i.runAt)]);
  return rows.length;
}
