import { SchedulesRepository, TenantsRepository, type TenantRecord } from '@almanac/persistence';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { SkewedClock } from '@almanac/testing/skewed-clock';
import type { ApiSettings } from '../api-settings';
import type { KindsService } from '../kinds/kinds.service';
import type { StoredBytesQuota } from '../tenants/stored-bytes-quota';
import { SchedulesService } from './schedules.service';

const MINUTE = 60e3;

/** A resume goes by the database's clock (runs start by it), with the API host's clock ahead of it. */
describe('SchedulesService by the database clock (Postgres)', () => {
  let db: TestDatabase;
  let tenant: TenantRecord;

  beforeAll(async () => {
    db = await createTestDatabase();
    tenant = (await new TenantsRepository(db.dataSource).create('clock')).tenant;
  });
  afterAll(() => db.drop());

  it('resuming a skip schedule on a host running fast keeps the run not due yet by the database', async () => {
    const dbNow = async () => (await db.dataSource.query<{ now: Date }[]>(`SELECT now()`))[0].now.getTime();
    // 1-50 s into a minute by the database's clock (so the resume lands before the next one).
    let t = await dbNow();
    for (const bound = Date.now() + 15_000; (t % MINUTE < 1_000 || t % MINUTE > 50_000) && Date.now() < bound; t = await dbNow()) await new Promise((r) => setTimeout(r, 100));
    const next = new Date(t - (t % MINUTE) + MINUTE); // the next minute's run, not due yet by the database
    // The host's clock past it: 5 s past the next minute (10-59 s ahead of the database).
    const clock = new SkewedClock(next.getTime() + 5_000 - Date.now());
    const [{ id }] = await db.dataSource.query<{ id: string }[]>(
      `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, missed, paused, next_run_at, max_attempts)
       VALUES ($1, 'minutely', 'noop', '* * * * *', 'UTC', 'skip', true, $2, 3) RETURNING id::text AS id`,
      [tenant.id, new Date(next.getTime() - 10 * MINUTE)],
    );
    const service = new SchedulesService(new SchedulesRepository(db.dataSource), {} as KindsService, {} as StoredBytesQuota, clock, {} as ApiSettings);
    const resumed = await service.setPaused(tenant, id, false);
    expect(resumed).toMatchObject({ paused: false, nextRunAt: next.toISOString() });
  });
});
