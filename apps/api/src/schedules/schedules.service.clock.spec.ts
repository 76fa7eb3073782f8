import { nextOccurrences, occurrenceKey, parseSchedule } from '@almanac/domain';
import { SchedulesRepository, TenantsRepository, type TenantRecord } from '@almanac/persistence';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { SkewedClock } from '@almanac/testing/skewed-clock';
import type { ApiSettings } from '../api-settings';
import type { KindsService } from '../kinds/kinds.service';
import type { StoredBytesQuota } from '../tenants/stored-bytes-quota';
import { SchedulesService } from './schedules.service';

const MINUTE = 60e3;

/** Resumes and timing changes go by the database's clock (runs start by it), with the API host's clock off it. */
describe('SchedulesService by the database clock (Postgres)', () => {
  let db: TestDatabase;
  let tenant: TenantRecord;

  beforeAll(async () => {
    db = await createTestDatabase();
    tenant = (await new TenantsRepository(db.dataSource).create('clock')).tenant;
  });
  afterAll(() => db.drop());

  /** The database's time once it is 1-50 s into a minute (so a change made now lands in that minute). */
  async function earlyInAMinute(): Promise<number> {
    let t = await dbNow();
    for (const bound = Date.now() + 15_000; (t % MINUTE < 1_000 || t % MINUTE > 50_000) && Date.now() < bound; t = await dbNow()) await new Promise((r) => setTimeout(r, 100));
    return t;
  }
  const dbNow = async () => (await db.dataSource.query<{ now: Date }[]>(`SELECT now()`))[0].now.getTime();
  const service = (clock: SkewedClock) => {
    const s = new SchedulesService(new SchedulesRepository(db.dataSource), { lookup: async () => new Map() } as unknown as KindsService, {} as StoredBytesQuota, clock, {} as ApiSettings);
    Object.assign(s, { log: { info: () => undefined } }); // Nest injects it
    return s;
  };

  it('a cron change on a host running slow keeps the run already due by the database', async () => {
    const t = await earlyInAMinute();
    const due = new Date(t - (t % MINUTE)); // this minute's run: due by the database's clock
    const clock = new SkewedClock(due.getTime() - 5_000 - Date.now()); // the host: 5 s before it (6-55 s behind the database)
    const [{ id }] = await db.dataSource.query<{ id: string }[]>(
      `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, missed, next_run_at, max_attempts)
       VALUES ($1, 'slow-host', 'noop', '* * * * *', 'UTC', 'skip', $2, 3) RETURNING id::text AS id`,
      [tenant.id, new Date(due.getTime() + MINUTE)],
    );
    await db.dataSource.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state, attempts) VALUES ($1, $2, 'noop', $3, 's', 0)`, [tenant.id, occurrenceKey(id, due), due]);
    const changed = await service(clock).update(tenant, id, { cron: '*/2 * * * *' });
    expect(changed).toMatchObject({ removedOccurrences: 0, nextRunAt: nextOccurrences(parseSchedule('*/2 * * * *', 'UTC'), new Date(t), 1)[0].toISOString() });
    expect(await db.dataSource.query(`SELECT key FROM jobs WHERE tenant_id = $1`, [tenant.id])).toEqual([{ key: occurrenceKey(id, due) }]);
  });

  it('resuming a skip schedule on a host running fast keeps the run not due yet by the database', async () => {
    const t = await earlyInAMinute();
    const next = new Date(t - (t % MINUTE) + MINUTE); // the next minute's run, not due yet by the database
    // The host's clock past it: 5 s past the next minute (10-59 s ahead of the database).
    const clock = new SkewedClock(next.getTime() + 5_000 - Date.now());
    const [{ id }] = await db.dataSource.query<{ id: string }[]>(
      `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, missed, paused, next_run_at, max_attempts)
       VALUES ($1, 'minutely', 'noop', '* * * * *', 'UTC', 'skip', true, $2, 3) RETURNING id::text AS id`,
      [tenant.id, new Date(next.getTime() - 10 * MINUTE)],
    );
    const resumed = await service(clock).setPaused(tenant, id, false);
    expect(resumed).toMatchObject({ paused: false, nextRunAt: next.toISOString() });
  });
});
