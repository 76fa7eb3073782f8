import { MetricsService } from '@almanac/platform';
import type { CommitEntry } from '../src/jobs/ingest-commit';
import { type ApiHarness, inMs, MINUTE } from './api-harness';

/** A single POST's commit entry: a cold job of `tenantId` with `key`. */
export const entry = (tenantId: number, key: string, maxAttempts = 3, payload: string | null = null): CommitEntry => ({
  tenantId,
  tier: 'cold',
  traceParent: null,
  input: { kind: 'noop', key, runAt: new Date(inMs(48 * 60 * MINUTE)), payload, payloadBytes: payload === null ? 0 : payload.length + 2, maxAttempts, replay: 'conflict' },
});

/** A transaction of the test's own holding `key` of `tenantId` uncommitted (a batch request, or a replay, in flight). */
export async function holdKey(h: ApiHarness, tenantId: number, key: string) {
  const holder = h.db.dataSource.createQueryRunner();
  await holder.startTransaction();
  await holder.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state) VALUES ($1, $2, 'noop', now() + interval '2 days', 's')`, [tenantId, key]);
  return {
    async end() {
      if (holder.isTransactionActive) await holder.rollbackTransaction();
      await holder.release();
    },
  };
}

/**
 * Runs `work` while each (tenant, key) is held uncommitted, as holdKey; `release` rolls them all
 * back sooner (the holders' transactions end), and they are rolled back after `work` whatever happens.
 */
export async function withKeysHeld<T>(h: ApiHarness, keys: [number, string][], work: (release: () => Promise<void>) => Promise<T>): Promise<T> {
  const holds: Awaited<ReturnType<typeof holdKey>>[] = [];
  for (const [tenantId, key] of keys) holds.push(await holdKey(h, tenantId, key));
  const release = async () => void (await Promise.all(holds.map((held) => held.end())));
  try {
    return await work(release);
  } finally {
    await release().catch(() => undefined);
  }
}

/** Inserts the group commit has run (its rows-per-insert histogram's count). */
export async function insertsRun(h: ApiHarness): Promise<number> {
  const metric = h.app.get(MetricsService).registry.getSingleMetric('almanac_ingest_commit_rows')!;
  const values = (await metric.get()).values as { metricName?: string; value: number }[];
  return values.find((v) => v.metricName === 'almanac_ingest_commit_rows_count')?.value ?? 0;
}

/** Shared inserts split into each tenant's own, for `reason` (almanac_ingest_shared_inserts_split_total). */
export async function sharedInsertsSplit(h: ApiHarness, reason: 'held_key' | 'deadlock' | 'refused'): Promise<number> {
  const metric = h.app.get(MetricsService).registry.getSingleMetric('almanac_ingest_shared_inserts_split_total')!;
  const values = (await metric.get()).values as { labels: { reason?: string }; value: number }[];
  return values.find((v) => v.labels.reason === reason)?.value ?? 0;
}

/** Rows of `keys` by the transaction that wrote them: per transaction, each tenant's count. */
export async function rowsByTransaction(h: ApiHarness, like: string): Promise<Record<number, number>[]> {
  const rows: { tx: string; tenant_id: number; n: number }[] = await h.db.dataSource.query(
    `SELECT xmin::text AS tx, tenant_id, count(*)::int AS n FROM jobs WHERE key LIKE $1 GROUP BY 1, 2 ORDER BY 1, 2`,
    [like],
  );
  const byTx = new Map<string, Record<number, number>>();
  for (const r of rows) byTx.set(r.tx, { ...byTx.get(r.tx), [r.tenant_id]: r.n });
  return [...byTx.values()];
}

