import { isDeepStrictEqual } from 'node:util';
import { DomainValidationError, nextOccurrences, parseSchedule, resumedNextRunAt } from '@almanac/domain';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { retryingIdClash } from '../id-clash';
import { onConnection } from '../sql';
import { COLUMNS, type MissedPolicy, type NewSchedule, type RawSchedule, type RemovedOccurrences, type ScheduleChange, type ScheduleView, toView } from './schedule-view';
import { databaseNow } from '../statements/database-now.sql';
import { removeNeverStartedOccurrences, removeUnrunOccurrences } from './unrun-occurrences';

export type { NewSchedule, RemovedOccurrences, ScheduleChange, ScheduleView } from './schedule-view';

/**
 * An edit of kind, payload or maxAttempts leaves the occurrences due this soon as they were:
 * removed, one due in seconds waited for the recurring sweep's next run (every 60 s) to be made
 * again, and started that much late.
 */
const EDIT_KEEPS_DUE_WITHIN_MS = 2 * 60_000;

/**
 * CRUD for recurring schedules. Materialising occurrences is the promoter's; this repository
 * only keeps `next_run_at` and `version` right so the promoter's recurring sweep sees changes,
 * and clears not-yet-run occurrences when the timing or the jobs' values change, the schedule
 * is paused or goes away.
 */
@Injectable()
export class SchedulesRepository {
  constructor(private readonly db: DataSource) {}

  /**
   * Insert, or return the schedule that already has this key (`created: false`, also at the
   * quota, so a replay stays idempotent). A new key is refused (`quota` = the tenant's count)
   * once the tenant holds `maxForTenant` schedules; the count is read in the INSERT itself, so
   * concurrent creates overshoot by at most the number in flight. A delete can land between a
   * conflicting insert and the read of the existing row; the insert is then simply tried again.
   * Its first run is the first occurrence after the database's now (a fast API host skipped it).
   */
  async create(
    s: NewSchedule,
    maxForTenant = Number.MAX_SAFE_INTEGER,
  ): Promise<{ created: boolean; schedule: ScheduleView } | { quota: number }> {
    const nextRunAt = nextOccurrences(s.timing, await databaseNow(this.db), 1)[0] ?? null;
    for (let attempt = 1; ; attempt++) {
      const inserted: RawSchedule[] = await retryingIdClash('schedules', () => this.db.query(
        `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, payload, max_attempts, missed, next_run_at, expect_within_seconds)
         SELECT $1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $11
          WHERE (SELECT count(*) FROM schedules WHERE tenant_id = $1) < $10
         ON CONFLICT (tenant_id, key) DO NOTHING
         RETURNING ${COLUMNS}`,
        [s.tenantId, s.key, s.kind, s.cron, s.timezone, jsonParam(s.payload), s.maxAttempts, s.missed, nextRunAt, maxForTenant, s.expectWithinSeconds],
      ));
      if (inserted[0]) return { created: true, schedule: toView(inserted[0]) };
      const existing: RawSchedule[] = await this.db.query(
        `SELECT ${COLUMNS} FROM schedules WHERE tenant_id = $1 AND key = $2`,
        [s.tenantId, s.key],
      );
      if (existing[0]) return { created: false, schedule: toView(existing[0]) };
      const [{ n }] = await this.db.query<{ n: number }[]>(`SELECT count(*)::int AS n FROM schedules WHERE tenant_id = $1`, [s.tenantId]);
      if (n >= maxForTenant) return { quota: n };
      if (attempt >= 5) throw new Error(`schedule key ${s.key} keeps being created and deleted concurrently`);
    }
  }

  /** `over`: the caller stopped waiting (onConnection). */
  async findForTenant(tenantId: number, id: string, over?: AbortSignal): Promise<ScheduleView | null> {
    const rows: RawSchedule[] = await onConnection(this.db, over, (c): Promise<RawSchedule[]> => c.query(`SELECT ${COLUMNS} FROM schedules WHERE id = $1 AND tenant_id = $2`, [id, tenantId]));
    return rows[0] ? toView(rows[0]) : null;
  }

  /** Which of `keys` name one of the tenant's schedules. */
  async knownKeys(tenantId: number, keys: readonly string[]): Promise<string[]> {
    const rows: { key: string }[] = await this.db.query(`SELECT key FROM schedules WHERE tenant_id = $1 AND key = ANY ($2::text[])`, [tenantId, keys]);
    return rows.map((r) => r.key);
  }

  /** Keyset page ordered by key (the unique (tenant_id, key) index). `over`: the caller stopped waiting (onConnection). */
  async list(tenantId: number, afterKey: string | null, limit: number, over?: AbortSignal): Promise<ScheduleView[]> {
    const rows: RawSchedule[] = await onConnection(this.db, over, (c): Promise<RawSchedule[]> => afterKey === null
      ? c.query(`SELECT ${COLUMNS} FROM schedules WHERE tenant_id = $1 ORDER BY key LIMIT $2`, [tenantId, limit])
      : c.query(`SELECT ${COLUMNS} FROM schedules WHERE tenant_id = $1 AND key > $2 ORDER BY key LIMIT $3`, [tenantId, afterKey, limit]));
    return rows.map(toView);
  }

  /**
   * Applies a change in one transaction, at the database's now (runs start by its clock: by an
   * API host's, one running slow removed runs already due, one running fast skipped one not due
   * yet); `'changed'` when a timing change lost a race (see ScheduleChange.timing). A timing
   * change bumps `version`, sets the new timing's first `next_run_at` after now and removes the
   * occurrences not started and not due by now, so the recurring
   * sweep makes the new timing's. A change of what the occurrences' jobs get (kind, payload,
   * maxAttempts) removes those not started and not due within EDIT_KEEPS_DUE_WITHIN_MS, and moves
   * `next_run_at` back to the earliest of them, so the sweep makes them again with the new values.
   * Those due sooner, or due and waiting (behind a tenant's limit), keep what they were made
   * with: made again, ones older than the sweep's late tolerance would count as missed.
   */
  async update(
    tenantId: number,
    id: string,
    change: ScheduleChange,
  ): Promise<{ schedule: ScheduleView; removed: RemovedOccurrences } | 'changed' | null> {
    return this.db.transaction(async (tx) => {
      // The row first, then the time: read before a wait for the row (the recurring sweep's
      // batch holds it while it inserts), `now` was that wait's start, and occurrences that
      // fell due during it were removed as not due yet.
      const locked: RawSchedule[] = await tx.query(`SELECT ${COLUMNS} FROM schedules WHERE id = $1 AND tenant_id = $2 FOR UPDATE`, [id, tenantId]);
      if (locked.length === 0) return null;
      change = withoutUnchanged(change, locked[0]);
      const now = await databaseNow(tx);
      const sets: string[] = ['updated_at = now()'];
      let guard = '';
      const params: unknown[] = [id, tenantId];
      const set = (column: string, value: unknown, cast = '') => sets.push(`${column} = $${params.push(value)}${cast}`);
      if (change.kind !== undefined) set('kind', change.kind);
      if (change.cron !== undefined) set('cron', change.cron);
      if (change.timezone !== undefined) set('timezone', change.timezone);
      if (change.payload !== undefined) {
        set('payload', jsonParam(change.payload), '::jsonb');
        sets.push('payload_ref = NULL'); // a new version: stored when its first occurrences need it
      }
      if (change.maxAttempts !== undefined) set('max_attempts', change.maxAttempts);
      if (change.missed !== undefined) set('missed', change.missed);
      if (change.expectWithinSeconds !== undefined) {
        set('expect_within_seconds', change.expectWithinSeconds);
        // Watched from now on: runs before the expectation was set are not reported.
        set('watched_through', now);
      }
      if (change.timing) {
        set('next_run_at', nextOccurrences(change.timing.schedule, now, 1)[0] ?? null);
        set('timing_since', now); // run history computes occurrences from the timing only after it
        sets.push('version = version + 1');
        // The new timing's past instants never had rows: watched from now on, like a new expectation.
        if (change.expectWithinSeconds === undefined) set('watched_through', now);
        guard = ` AND cron = $${params.push(change.timing.from.cron)} AND timezone = $${params.push(change.timing.from.timezone)}`;
      }
      const rows: [RawSchedule[], number] = await tx.query(
        `UPDATE schedules SET ${sets.join(', ')} WHERE id = $1 AND tenant_id = $2${guard} RETURNING ${COLUMNS}`,
        params,
      );
      const row = rows[0][0];
      if (!row) {
        if (!guard) return null;
        const exists: unknown[] = await tx.query(`SELECT 1 FROM schedules WHERE id = $1 AND tenant_id = $2`, [id, tenantId]);
        return exists.length ? 'changed' : null;
      }
      // A new timing replaces the occurrences not due yet. Those due (waiting behind a limit, say)
      // or started (waiting for a retry) run as they are: removed, the new timing, made from now
      // on, never made them again, and a cancelled retry's key blocked its instant under it.
      if (change.timing) return { schedule: toView(row), removed: { count: (await removeNeverStartedOccurrences(tx, tenantId, row.id, now, 'remove')).count } };
      if (change.kind === undefined && change.payload === undefined && change.maxAttempts === undefined) return { schedule: toView(row), removed: { count: 0 } };
      const gone = await removeNeverStartedOccurrences(tx, tenantId, row.id, new Date(now.getTime() + EDIT_KEEPS_DUE_WITHIN_MS), 'keep');
      const next = earlier(row.next_run_at, gone.earliest);
      if (next === row.next_run_at) return { schedule: toView(row), removed: { count: gone.count } };
      const moved: [RawSchedule[], number] = await tx.query(`UPDATE schedules SET next_run_at = $2 WHERE id = $1 RETURNING ${COLUMNS}`, [row.id, next]);
      return { schedule: toView(moved[0][0]), removed: { count: gone.count } };
    });
  }

  /**
   * Pausing removes the occurrences that have not started (their hints go stale), so a pause
   * stops runs at once rather than after the horizon already materialised (one moved by hand is
   * cancelled: see MovedOccurrences); `next_run_at` moves
   * back to the earliest of them, so on resume the recurring sweep brings back per the missed
   * policy those that fell due meanwhile and materialises the rest again. Occurrences that
   * started (running, or waiting for a retry) are left alone. Resuming applies the missed policy
   * to the occurrences due while paused (resumedNextRunAt) by the database's clock, read once the
   * row is locked: runs start by it, and by an API host running fast a run not due yet was skipped.
   * A no-op when already so.
   */
  async setPaused(tenantId: number, id: string, paused: boolean): Promise<{ schedule: ScheduleView; removed: RemovedOccurrences } | null> {
    return this.db.transaction(async (tx) => {
      const locked: RawSchedule[] = await tx.query(`SELECT ${COLUMNS} FROM schedules WHERE id = $1 AND tenant_id = $2 FOR UPDATE`, [id, tenantId]);
      const current = locked[0];
      if (!current) return null;
      let removed: RemovedOccurrences = { count: 0 };
      let nextRunAt = current.next_run_at;
      if (paused && !current.paused) {
        const gone = await removeNeverStartedOccurrences(tx, tenantId, current.id, null, 'cancel');
        removed = { count: gone.count };
        nextRunAt = earlier(nextRunAt, gone.earliest);
      }
      // Read once the row is locked; `now()` is the transaction's start, before that wait.
      const now = await databaseNow(tx);
      if (!paused && current.paused) nextRunAt = resumedCursor(current, now);
      const rows: [RawSchedule[], number] = await tx.query(
        // A resumed schedule is watched from now on (the cursor's now): the runs a pause skipped are not missed ones.
        `UPDATE schedules SET paused = $3, updated_at = now(), watched_through = CASE WHEN paused AND NOT $3 THEN $5 ELSE watched_through END,
                              last_error = CASE WHEN $3 THEN last_error END, next_run_at = $4
          WHERE id = $1 AND tenant_id = $2 RETURNING ${COLUMNS}`,
        [id, tenantId, paused, nextRunAt, now],
      );
      return { schedule: toView(rows[0][0]), removed };
    });
  }

  async delete(tenantId: number, id: string): Promise<{ schedule: ScheduleView; removed: RemovedOccurrences } | null> {
    return this.db.transaction(async (tx) => {
      const rows: [RawSchedule[], number] = await tx.query(
        `DELETE FROM schedules WHERE id = $1 AND tenant_id = $2 RETURNING ${COLUMNS}`,
        [id, tenantId],
      );
      const row = rows[0][0];
      if (!row) return null;
      return { schedule: toView(row), removed: await removeUnrunOccurrences(tx, tenantId, row.id) };
    });
  }
}

/** Where a paused schedule resumes; as it was when its cron or zone no longer parses (the sweep parks it). */
function resumedCursor(s: RawSchedule, now: Date): Date | null {
  let timing;
  try {
    timing = parseSchedule(s.cron, s.timezone);
  } catch (err) {
    if (!(err instanceof DomainValidationError)) throw err;
    return s.next_run_at;
  }
  return resumedNextRunAt(timing, s.next_run_at, now, s.missed as MissedPolicy);
}

function earlier(a: Date | null, b: Date | null): Date | null {
  if (a === null) return b;
  return b !== null && b.getTime() < a.getTime() ? b : a;
}

/** node-postgres would send a JS string as a JSON string only if stringified; null stays SQL NULL. */
function jsonParam(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}

/**
 * The change without the fields it sends as they are stored: a client that sends its whole
 * schedule on every sync (or retries a PATCH) changes nothing. Sent as a change, the same payload
 * was stored again as a new version and an hour of occurrences made again, and the same
 * expectation hid the runs whose window was still open from the watch.
 */
function withoutUnchanged(change: ScheduleChange, row: RawSchedule): ScheduleChange {
  const out = { ...change };
  if (out.kind === row.kind) delete out.kind;
  if (out.payload !== undefined && isDeepStrictEqual(out.payload, row.payload)) delete out.payload;
  if (out.maxAttempts === row.max_attempts) delete out.maxAttempts;
  if (out.missed === row.missed) delete out.missed;
  if (out.expectWithinSeconds !== undefined && out.expectWithinSeconds === row.expect_within_seconds) delete out.expectWithinSeconds;
  return out;
}
