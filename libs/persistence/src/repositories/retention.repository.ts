import { type KeyReservation, keyReservationDays } from '@almanac/domain';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { type Db, sql } from '../sql';
import { databaseNow } from '../statements/database-now.sql';
import { REMOVE_EXPIRED_BULK_OPERATIONS_SQL } from '../statements/remove-expired-bulk-operations.sql';
import { REMOVE_EXPIRED_SIGNING_SECRETS_SQL } from '../statements/remove-expired-signing-secrets.sql';
import { REMOVE_ABANDONED_EFFECTS_SQL } from '../statements/remove-abandoned-effects.sql';
import { REMOVE_EXPIRED_EFFECTS_SQL } from '../statements/remove-expired-effects.sql';
import { EXPIRED_JOB_IDS_SQL, OLDEST_EXPIRED_SQL, REMOVE_EXPIRED_JOBS_SQL } from '../statements/remove-expired-jobs.sql';
import { REMOVE_EXPIRED_KEYS_SQL } from '../statements/remove-expired-keys.sql';
import { REMOVE_UNUSED_SCHEDULE_PAYLOADS_SQL } from '../statements/remove-unused-schedule-payloads.sql';

/** One tenant's retention, the installation default filled in. */
export interface RetentionPolicy {
  tenantId: number;
  retentionSeconds: number;
  freesKeys: boolean;
  /** How long the keys it retires stay reserved. */
  keyReservation: KeyReservation;
}

/** The retention sweep's view of the database. */
@Injectable()
export class RetentionRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Every tenant's policy in id order (tenants are few and never hard-deleted), the installation's defaults filled in. */
  async policies(defaultSeconds: number, defaultKeyReservation: KeyReservation, db: Db = this.dataSource): Promise<RetentionPolicy[]> {
    const { rows } = await sql<{ id: number; retention_seconds: number; frees_keys: boolean; key_reservation_seconds: number | null; keys_reserved_forever: boolean }>(
      db,
      `SELECT id, coalesce(retention_seconds, $1)::int AS retention_seconds, frees_keys, key_reservation_seconds, keys_reserved_forever FROM tenants ORDER BY id`,
      [defaultSeconds],
    );
    return rows.map((r) => ({
      tenantId: r.id,
      retentionSeconds: r.retention_seconds,
      freesKeys: r.frees_keys,
      keyReservation: r.keys_reserved_forever ? 'forever' : (r.key_reservation_seconds ?? defaultKeyReservation),
    }));
  }

  /**
   * Now by the database's clock: ingest's check of reserved keys goes by its day, and retention by
   * it too. The sweep reads it once a run and passes its cutoff and UTC day to the statements below.
   */
  async databaseNow(db: Db = this.dataSource): Promise<Date> {
    return databaseNow(db);
  }

  /**
   * Removes up to `limit` of the tenant's finished jobs that ended and were due before `cutoff`,
   * oldest first, with their attempts; retires their keys unless freed, on `removedOn` (YYYY-MM-DD,
   * the database's UTC day), reserved for the days the tenant's row names at the statement (a
   * switch mid-run applies from the next batch), else the policy's (an override removed mid-run
   * applies from the next run).
   * `lastRunAt` is the run time of the last row removed (null when none was).
   */
  async removeExpired(
    policy: RetentionPolicy,
    cutoff: Date,
    limit: number,
    removedOn: string,
    db: Db = this.dataSource,
    /** `only` these rows (null: any); never the `kept` ones (rows set aside); run times `from` on (none: all). */
    scope: { only?: readonly string[]; kept?: readonly string[]; from?: Date | null } = {},
  ): Promise<{ removed: number; lastRunAt: Date | null; keysFreed: boolean }> {
    const { rows } = await sql<{ removed: number; last_run_at: Date | null; keys_freed: boolean | null }>(db, REMOVE_EXPIRED_JOBS_SQL, [
      policy.tenantId,
      cutoff,
      limit,
      removedOn,
      keyReservationDays(policy.keyReservation),
      scope.only ?? null,
      scope.kept ?? [],
      scope.from ?? '-infinity',
    ]);
    return { removed: rows[0].removed, lastRunAt: rows[0].last_run_at, keysFreed: rows[0].keys_freed === true };
  }

  /** The ids of the tenant's expired rows removeExpired would take next, less the `kept` ones, run times `from` on. */
  async expiredIds(tenantId: number, cutoff: Date, limit: number, kept: readonly string[], from: Date | null = null): Promise<string[]> {
    const { rows } = await sql<{ id: string }>(this.dataSource, EXPIRED_JOB_IDS_SQL, [tenantId, cutoff, limit, kept, from ?? '-infinity']);
    return rows.map((r) => r.id);
  }

  /** Frees up to `limit` reserved keys whose reservation ended before the day before `today` (YYYY-MM-DD, the database's UTC day); how many went. */
  async removeExpiredKeys(today: string, limit: number, db: Db = this.dataSource): Promise<number> {
    const { rows } = await sql<{ removed: number }>(db, REMOVE_EXPIRED_KEYS_SQL, [today, limit]);
    return rows[0].removed;
  }

  /** Removes up to `limit` of the tenant's effect records done before `cutoff`; how many went. */
  async removeExpiredEffects(tenantId: number, cutoff: Date, limit: number, db: Db = this.dataSource): Promise<number> {
    const { rows } = await sql<{ removed: number }>(db, REMOVE_EXPIRED_EFFECTS_SQL, [tenantId, cutoff, limit]);
    return rows[0].removed;
  }

  /** Removes up to `limit` of the tenant's effect records claimed before `cutoff` and never done; how many went. */
  async removeAbandonedEffects(tenantId: number, cutoff: Date, limit: number, db: Db = this.dataSource): Promise<number> {
    const { rows } = await sql<{ removed: number }>(db, REMOVE_ABANDONED_EFFECTS_SQL, [tenantId, cutoff, limit]);
    return rows[0].removed;
  }

  /** Removes up to `limit` of the tenant's stored schedule payloads nothing points at any more; how many went. */
  async removeUnusedSchedulePayloads(tenantId: number, limit: number, db: Db = this.dataSource): Promise<number> {
    const { rows } = await sql<{ removed: number }>(db, REMOVE_UNUSED_SCHEDULE_PAYLOADS_SQL, [tenantId, limit]);
    return rows[0].removed;
  }

  /** Removes up to `limit` of the tenant's bulk operations that ended before `cutoff`; how many went. */
  async removeExpiredBulkOperations(tenantId: number, cutoff: Date, limit: number, db: Db = this.dataSource): Promise<number> {
    const { rows } = await sql<{ removed: number }>(db, REMOVE_EXPIRED_BULK_OPERATIONS_SQL, [tenantId, cutoff, limit]);
    return rows[0].removed;
  }

  /** Removes the tenant's signing secrets that stopped being live before `cutoff`; how many went. */
  async removeExpiredSigningSecrets(tenantId: number, cutoff: Date, db: Db = this.dataSource): Promise<number> {
    const { rows } = await sql<{ removed: number }>(db, REMOVE_EXPIRED_SIGNING_SECRETS_SQL, [tenantId, cutoff]);
    return rows[0].removed;
  }

  /**
   * The run time of the tenant's oldest expired job still there, run times `from` on (where the
   * sweep's walk got to: from the oldest, every budget-bound run stepped over the backlog the walk
   * passed), less the `kept` ones (set aside: they would hold the figure for good), or null: what
   * "behind" is measured from.
   */
  async oldestExpired(tenantId: number, cutoff: Date, kept: readonly string[] = [], from: Date | null = null, db: Db = this.dataSource): Promise<Date | null> {
    const { rows } = await sql<{ run_at: Date }>(db, OLDEST_EXPIRED_SQL, [tenantId, cutoff, kept, from ?? '-infinity']);
    return rows[0]?.run_at ?? null;
  }
}
