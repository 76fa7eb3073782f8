import { RecurringRepository } from '@almanac/persistence';
import { MetricsService } from '@almanac/platform';
import { Logger } from '@nestjs/common';
import { RecurringSweep } from '../../apps/promoter/src/recurring/recurring.sweep';
import { SchedulePlanner } from '../../apps/promoter/src/recurring/schedule-planner';
import { SweepMetrics } from '../../apps/promoter/src/sweeps/sweep-metrics';
import { createTestDatabase, type TestDatabase } from './test-db';

/**
 * What the recurring sweep's specs (apps/promoter/src/recurring/recurring.sweep.*.spec.ts) share:
 * their database, the sweep with its limits set per test, and the schedules and occurrences they
 * write and read.
 */

export const HOUR = 3600e3;
export const DAY = 24 * HOUR;
export const NOW = new Date('2026-11-29T10:20:00Z');
const TOLERANCE = 5 * 60e3;

interface ScheduleSeed {
  cron?: string;
  timezone?: string;
  nextRunAt: Date | null;
  missed?: string;
  paused?: boolean;
  payload?: unknown;
  tenantId?: number;
}

interface RecurringDb {
  db: TestDatabase;
  repo: RecurringRepository;
  metrics: SweepMetrics;
}

/** A fresh database with the sweep's repository and metrics; the sweep's logs off. */
export async function openRecurringDb(): Promise<RecurringDb> {
  Logger.overrideLogger(false);
  const db = await createTestDatabase();
  return { db, repo: new RecurringRepository(db.dataSource), metrics: new SweepMetrics(new MetricsService()) };
}

/** The sweep and the schedule rows, on the database `on()` gives (opened in the spec's beforeAll). */
export function recurringHelpers(on: () => RecurringDb) {
  const sweep = (
    over: {
      batchSize?: number; maxPerRun?: number; concurrency?: number; missedCap?: number; onMaterialised?: (now: Date) => Promise<unknown>;
      maxBatchRows?: number; maxBatchBytes?: number; maxPerTenantPerRun?: number; nearMs?: number;
    } = {},
  ) =>
    new RecurringSweep(
      on().repo,
      new SchedulePlanner({ missedCap: over.missedCap ?? 100, lateToleranceMs: TOLERANCE }),
      {
        horizonMs: DAY, batchSize: over.batchSize ?? 1000, maxPerRun: over.maxPerRun ?? 1e6, concurrency: over.concurrency ?? 1,
        maxBatchRows: over.maxBatchRows ?? 20_000, maxBatchBytes: over.maxBatchBytes ?? 16 * 1024 * 1024, maxPerTenantPerRun: over.maxPerTenantPerRun ?? 1e6,
        nearMs: over.nearMs ?? 10 * 60e3,
      },
      on().metrics,
      over.onMaterialised,
    );

  async function schedule(seed: ScheduleSeed): Promise<string> {
    const [row] = await on().db.dataSource.query<{ id: string }[]>(
      `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, payload, missed, paused, next_run_at, max_attempts)
       VALUES ($1, $2, 'noop', $3, $4, $5::jsonb, $6, $7, $8, 5) RETURNING id::text AS id`,
      [
        seed.tenantId ?? 1,
        `s-${Math.random().toString(36).slice(2)}`,
        seed.cron ?? '0 * * * *',
        seed.timezone ?? 'UTC',
        seed.payload === undefined ? null : JSON.stringify(seed.payload),
        seed.missed ?? 'skip',
        seed.paused ?? false,
        seed.nextRunAt,
      ],
    );
    return row.id;
  }

  async function occurrences(id: string): Promise<{ key: string; run_at: Date; state: string }[]> {
    return on().db.dataSource.query(
      `SELECT key, run_at, state FROM jobs WHERE key LIKE $1 ORDER BY run_at`,
      [`schedule:${id}:%`],
    );
  }

  async function nextRunAt(id: string): Promise<Date | null> {
    const [row] = await on().db.dataSource.query<{ next_run_at: Date | null }[]>(`SELECT next_run_at FROM schedules WHERE id = $1`, [id]);
    return row.next_run_at;
  }

  /** The database's time: schedule edits go by it. */
  const dbTime = async () => (await on().db.dataSource.query<{ now: Date }[]>(`SELECT now()`))[0].now;

  return { sweep, schedule, occurrences, nextRunAt, dbTime };
}

export const iso = (rows: { run_at: Date }[]) => rows.map((r) => r.run_at.toISOString());
export const nextHour = (t: Date) => new Date(Math.floor(t.getTime() / HOUR) * HOUR + HOUR);
