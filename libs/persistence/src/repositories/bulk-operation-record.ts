import type { BulkAction, BulkChange, BulkFilter, BulkState } from '@almanac/domain';

export interface BulkOperationRecord {
  id: string;
  tenantId: number;
  /** The request's idempotency key, unique per tenant; null when it gave none. */
  key: string | null;
  action: BulkAction;
  filter: BulkFilter;
  change: BulkChange | null;
  state: BulkState;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** Jobs the filter matched as the operation started; null while pending. */
  matched: number | null;
  chunks: number | null;
  /** The next chunk to apply (chunks applied so far). */
  nextChunk: number;
  /** Jobs cancelled or rescheduled. */
  changed: number;
  /** Matched jobs that had started or finished by the time their chunk ran. */
  skipped: number;
  /** Runs in a row in which its match or a chunk failed (reset by the next step that succeeds). */
  failures: number;
  /** Of those, the last ones in a row whose cause recurs (see countFailure). */
  lastingFailures: number;
  error: string | null;
}

export interface OperationRow {
  id: string;
  tenant_id: number;
  key: string | null;
  action: BulkAction;
  filter: Record<string, unknown>;
  change: Record<string, unknown> | null;
  state: BulkState;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  matched: number | null;
  chunks: number | null;
  next_chunk: number;
  changed: number;
  skipped: number;
  failures: number;
  lasting_failures: number;
  error: string | null;
}

/** An operation as the API and the sweep see it, from its row. */
export function toRecord(r: OperationRow): BulkOperationRecord {
  const f = r.filter;
  const filter: BulkFilter = {};
  if (typeof f.kind === 'string') filter.kind = f.kind;
  if (typeof f.keyPrefix === 'string') filter.keyPrefix = f.keyPrefix;
  if (typeof f.runAtFrom === 'string') filter.runAtFrom = new Date(f.runAtFrom);
  if (typeof f.runAtTo === 'string') filter.runAtTo = new Date(f.runAtTo);
  if (f.state === 'scheduled' || f.state === 'queued') filter.state = f.state;
  const c = r.change;
  const change: BulkChange | null = !c ? null : typeof c.runAt === 'string' ? { runAt: new Date(c.runAt) } : { shiftBySeconds: Number(c.shiftBySeconds) };
  return {
    id: r.id, tenantId: r.tenant_id, key: r.key, action: r.action, filter, change, state: r.state,
    createdAt: r.created_at, startedAt: r.started_at, finishedAt: r.finished_at,
    matched: r.matched, chunks: r.chunks, nextChunk: r.next_chunk, changed: r.changed, skipped: r.skipped,
    failures: r.failures, lastingFailures: r.lasting_failures, error: r.error,
  };
}
