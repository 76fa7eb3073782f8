import { hintsOf, type HotQueue } from '@almanac/platform';
import type { DataSource } from 'typeorm';

/** Inserts `count` jobs in one statement: run_at = start + i * stepMs (i = 0..count-1). */
export async function insertJobs(
  db: DataSource,
  opts: { count: number; start: Date; stepMs?: number; state?: string; prefix?: string; tenantId?: number; leaseUntil?: Date | null; attempts?: number; maxAttempts?: number },
): Promise<string[]> {
  const rows = await db.query<{ id: string }[]>(
    `INSERT INTO jobs (tenant_id, key, kind, run_at, state, lease_until, attempts, max_attempts)
     SELECT $1, $2 || g, 'noop', $3::timestamptz + (g * $4::bigint) * interval '1 millisecond', $5::"char", $7, $8, $9
       FROM generate_series(0, $6 - 1) g
     RETURNING id::text AS id`,
    [
      opts.tenantId ?? 1,
      `${opts.prefix ?? 'k'}-${Math.random().toString(36).slice(2, 8)}-`,
      opts.start,
      opts.stepMs ?? 0,
      opts.state ?? 's',
      opts.count,
      opts.leaseUntil ?? null,
      opts.attempts ?? 0,
      opts.maxAttempts ?? 3,
    ],
  );
  return rows.map((r) => r.id);
}

export async function statesOf(db: DataSource, ids: string[]): Promise<Record<string, number>> {
  const rows = await db.query<{ state: string; n: number }[]>(
    `SELECT state, count(*)::int AS n FROM jobs WHERE id = ANY($1::bigint[]) GROUP BY state`,
    [ids],
  );
  return Object.fromEntries(rows.map((r) => [r.state, r.n]));
}

/** Row ids waiting or delayed in the hot queue, envelopes opened (what a dispatcher would still receive). */
export async function queuedRowIds(queue: HotQueue): Promise<string[]> {
  return (await queue.held()).map((x) => x.hint.id);
}

/** Rows waiting or delayed in the hot queue (an envelope counts its rows). */
export async function queuedCount(queue: HotQueue): Promise<number> {
  return (await queuedRowIds(queue)).length;
}

/** How many of `ids` the hot queue holds (inside its envelopes). */
export async function inQueue(queue: HotQueue, ids: string[]): Promise<number> {
  const held = new Set(await queuedRowIds(queue));
  return ids.filter((id) => held.has(id)).length;
}

/** The hot-queue job (an envelope or a coarse window's job) that holds row `id`, with its hints, if any. */
export async function envelopeOf(queue: HotQueue, id: string) {
  for (const job of await queue.queue.getJobs(['waiting', 'delayed'])) {
    if (!job) continue;
    const hints = job.data.w === undefined ? hintsOf(job.data) : await queue.windows.peek(job.data.w);
    if (hints.some((h) => h.id === id)) return { job, hints };
  }
  return undefined;
}
