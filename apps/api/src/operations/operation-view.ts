import type { BulkOperationRecord } from '@almanac/persistence';

/** What GET /v1/operations/:id answers (and the 202 of a bulk request). */
export interface OperationView {
  id: string;
  /** The request's key, when it gave one. */
  key?: string;
  action: string;
  state: string;
  filter: Record<string, unknown>;
  runAt?: string;
  shiftBySeconds?: number;
  /** Jobs the filter matched when the operation started; null until then. */
  matched: number | null;
  /** Of `matched`, how many have been looked at (changed + skipped). */
  processed: number;
  changed: number;
  /** Matched jobs that had started or finished by the time their turn came. */
  skipped: number;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  error: string | null;
}

export function operationView(op: BulkOperationRecord): OperationView {
  const filter: Record<string, unknown> = { ...op.filter };
  for (const k of ['runAtFrom', 'runAtTo'] as const) if (op.filter[k]) filter[k] = op.filter[k].toISOString();
  return {
    id: op.id,
    ...(op.key !== null ? { key: op.key } : {}),
    action: op.action,
    state: op.state,
    filter,
    ...(op.change && 'runAt' in op.change ? { runAt: op.change.runAt.toISOString() } : {}),
    ...(op.change && 'shiftBySeconds' in op.change ? { shiftBySeconds: op.change.shiftBySeconds } : {}),
    matched: op.matched,
    processed: op.changed + op.skipped,
    changed: op.changed,
    skipped: op.skipped,
    createdAt: op.createdAt.toISOString(),
    startedAt: op.startedAt?.toISOString() ?? null,
    finishedAt: op.finishedAt?.toISOString() ?? null,
    error: op.error,
  };
}
