/**
 * Bulk operations (issue 17 item 3): cancel or reschedule a tenant's jobs by filter. The filter
 * is matched once, when the operation starts; the jobs it matched then are changed in chunks,
 * each one guarded by the state it expects, so a job that started meanwhile is skipped, never
 * changed under its handler.
 */
export const BULK_ACTIONS = ['cancel', 'reschedule'] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];

/**
 * pending: accepted, not matched yet · running: matched, chunks left · done · failed (see
 * `error`) · cancelled: stopped by its tenant (POST /v1/operations/:id/cancel), the chunks
 * applied before it stay applied.
 */
export const BULK_STATES = ['pending', 'running', 'done', 'failed', 'cancelled'] as const;
export type BulkState = (typeof BULK_STATES)[number];

/** Only jobs that have not started can be cancelled or rescheduled. */
export const BULK_JOB_STATES = ['scheduled', 'queued'] as const;
export type BulkJobState = (typeof BULK_JOB_STATES)[number];

export interface BulkFilter {
  kind?: string;
  keyPrefix?: string;
  /** run_at ≥ runAtFrom */
  runAtFrom?: Date;
  /** run_at < runAtTo */
  runAtTo?: Date;
  /** scheduled or queued; both when absent */
  state?: BulkJobState;
}
export const BULK_FILTER_FIELDS = ['kind', 'keyPrefix', 'runAtFrom', 'runAtTo', 'state'] as const;

/** A reschedule: every matched job to one instant, or each moved by the same number of seconds. */
export type BulkChange = { runAt: Date } | { shiftBySeconds: number };

/** Ten years either way: further is a typo, and timestamps stay far inside Postgres' range. */
export const MAX_SHIFT_SECONDS = 10 * 366 * 24 * 3600;

/**
 * Jobs per chunk: one transaction locks and changes this many rows (~100-300 ms on this machine),
 * so a claim that meets one of them waits at most that long.
 */
export const BULK_CHUNK_JOBS = 5000;
