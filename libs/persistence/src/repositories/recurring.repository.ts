import { DataSource, EntityManager } from 'typeorm';
import { sql } from '../sql';
import { ADVANCE_SCHEDULES_SQL } from '../statements/advance-schedules.sql';
import { CLAIM_DUE_SCHEDULES_SQL, DUE_SCHEDULE_IDS_SQL } from '../statements/claim-due-schedules.sql';
import { databaseNow } from '../statements/database-now.sql';
import { INSERT_OCCURRENCES_SQL } from '../statements/insert-occurrences.sql';
import { STORE_SCHEDULE_PAYLOADS_SQL } from '../statements/store-schedule-payloads.sql';

/** A schedule row claimed by the recurring sweep, payload kept as JSON text (copied, not parsed). */
export interface DueSchedule {
  id: string;
  tenantId: number;
  nextRunAt: Date;
  cron: string;
  timezone: string;
  missed: string;
  kind: string;
  /** The payload as JSON text, or null: none, or a stored version (`payloadRef`) its occurrences point at. */
  payloadJson: string | null;
  /** The stored version of a large payload (schedule_payloads), which occurrences point at instead of copying it. */
  payloadRef: string | null;
  maxAttempts: number;
}

/** One occurrence to insert as a job row: its payload copied, or pointing at a stored version. */
export interface OccurrenceRow {
  tenantId: number;
  key: string;
  kind: string;
  runAt: Date;
  payloadJson: string | null;
  payloadRef: string | null;
  maxAttempts: number;
}

/**
 * A schedule payload at least this large (as JSON text) is stored once per version and pointed
 * at by its occurrences; a smaller one is copied into each. A copy under a kilobyte costs less
 * than the pointer's probe at every claim and view, and stays inline in the row (no TOAST).
 */
export const PAYLOAD_BY_REFERENCE_BYTES = 1024;

/** A schedule's cursor after materialising: the first nominal time not yet turned into a row. */
export interface ScheduleAdvance {
  id: string;
  nextRunAt: Date | null;
}

/**
 * The recurring sweep's statements: claim due schedules, insert their occurrences (pointing at a
 * stored version of a large payload), advance their cursors, and set aside one Postgres refuses.
 */
export class RecurringRepository {
  constructor(private readonly db: DataSource) {}

  /**
   * Claims up to `limit` unpaused schedules whose next run time is ≤ `until` (schedules_due),
   * lets `plan` compute their occurrences, inserts those as scheduled job rows (one statement,
   * ON CONFLICT DO NOTHING: an occurrence already materialised stays as it is) and advances
   * each schedule's cursor, all in one transaction. Row locks make API edits of the same
   * schedules wait for the commit, so an edit always sees the advanced cursor.
   */
  async materialiseDueSchedules(
    until: Date,
    limit: number,
    plan: (schedules: DueSchedule[]) => { rows: OccurrenceRow[]; advances: ScheduleAdvance[] },
    /** Tenants whose schedules this claim skips (at their quota for the run). */
    excludeTenants: readonly number[] = [],
    /** Leave out occurrences whose key retention retired: the caller's retry after AL001 (isRetiredKeyError). */
    skipRetired = false,
    /** Only these schedules (null: any due): the caller's isolation of a batch Postgres refused. */
    onlyIds: readonly string[] | null = null,
  ): Promise<{ schedules: number; inserted: number; duplicates: number }> {
    return this.db.transaction(async (m) => {
      // A lost commit un-advances the schedules and un-inserts their rows; the next run
      // materialises the same keys again. No WAL flush wait per batch.
      await m.query(`SET LOCAL synchronous_commit = off`);
      const claimed = await this.claimDueSchedules(m, until, limit, excludeTenants, onlyIds);
      if (claimed.length === 0) return { schedules: 0, inserted: 0, duplicates: 0 };
      const { rows, advances } = plan(claimed);
      const inserted = await this.insertOccurrences(m, rows, skipRetired);
      await this.advanceSchedules(m, advances);
      return { schedules: claimed.length, inserted, duplicates: rows.length - inserted };
    });
  }

  /** The schedules a batch would claim, unlocked (DUE_SCHEDULE_IDS_SQL): what to split when the batch failed. */
  async dueScheduleIds(until: Date, limit: number, excludeTenants: readonly number[] = []): Promise<{ id: string; tenantId: number }[]> {
    const { rows } = await sql<{ id: string; tenant_id: number }>(this.db, DUE_SCHEDULE_IDS_SQL, [until, limit, excludeTenants]);
    return rows.map((r) => ({ id: r.id, tenantId: r.tenant_id }));
  }

  /** Now by the database's clock, by which runs start: what the sweep judges late by, read once a run. */
  databaseNow(): Promise<Date> {
    return databaseNow(this.db);
  }

  /** Pauses a schedule whose occurrences Postgres refuses, saying why (its `lastError`). */
  async setScheduleAside(id: string, error: string): Promise<void> {
    await sql(this.db, `UPDATE schedules SET paused = true, last_error = $2, updated_at = now() WHERE id = $1`, [id, error]);
  }

  private async claimDueSchedules(
    m: EntityManager,
    until: Date,
    limit: number,
    excludeTenants: readonly number[],
    onlyIds: readonly string[] | null,
  ): Promise<DueSchedule[]> {
    const { rows } = await sql<{
      id: string;
      tenant_id: number;
      next_run_at: Date;
      cron: string;
      timezone: string;
      missed: string;
      kind: string;
      payload: string | null;
      payload_ref: string | null;
      max_attempts: number;
    }>(
      m,
      CLAIM_DUE_SCHEDULES_SQL,
      [until, limit, excludeTenants, onlyIds],
    );
    const due: DueSchedule[] = rows.map((r) => ({
      id: r.id,
      tenantId: r.tenant_id,
      nextRunAt: r.next_run_at,
      cron: r.cron,
      timezone: r.timezone,
      missed: r.missed,
      kind: r.kind,
      payloadJson: r.payload,
      payloadRef: r.payload_ref,
      maxAttempts: r.max_attempts,
    }));
    return this.storeLargePayloads(m, due);
  }

  /** Large payloads not stored yet get their version (STORE_SCHEDULE_PAYLOADS_SQL); the schedules then carry its id instead of the text. */
  private async storeLargePayloads(m: EntityManager, due: DueSchedule[]): Promise<DueSchedule[]> {
    const large = due.filter((s) => s.payloadJson !== null && Buffer.byteLength(s.payloadJson) >= PAYLOAD_BY_REFERENCE_BYTES);
    if (large.length === 0) return due;
    const { rows } = await sql<{ schedule_id: string; ref: string }>(m, STORE_SCHEDULE_PAYLOADS_SQL, [large.map((s) => s.id)]);
    const refs = new Map(rows.map((r) => [r.schedule_id, r.ref]));
    return due.map((s) => (refs.has(s.id) ? { ...s, payloadJson: null, payloadRef: refs.get(s.id)! } : s));
  }

  /** Inserts occurrences; with `skipRetired`, those whose key retention retired are left out (INSERT_OCCURRENCES_SQL). */
  private async insertOccurrences(m: EntityManager, rows: OccurrenceRow[], skipRetired: boolean): Promise<number> {
    if (rows.length === 0) return 0;
    const { rowCount } = await sql(m, INSERT_OCCURRENCES_SQL, [
      rows.map((r) => r.tenantId),
      rows.map((r) => r.key),
      rows.map((r) => r.kind),
      rows.map((r) => r.runAt.toISOString()),
      rows.map((r) => r.payloadJson),
      rows.map((r) => r.maxAttempts),
      skipRetired,
      rows.map((r) => r.payloadRef),
    ]);
    return rowCount;
  }

  private async advanceSchedules(m: EntityManager, advances: ScheduleAdvance[]): Promise<void> {
    if (advances.length === 0) return;
    await m.query(
      ADVANCE_SCHEDULES_SQL,
      [advances.map((a) => a.id), advances.map((a) => a.nextRunAt?.toISOString() ?? null)],
    );
  }
}
