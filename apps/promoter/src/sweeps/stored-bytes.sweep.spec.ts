import { TenantsRepository, TenantStatsRepository } from '@almanac/persistence';
import { MetricsService } from '@almanac/platform';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { randomBytes } from 'node:crypto';
import { SweepMetrics } from './sweep-metrics';
import { StoredBytesSweep } from './stored-bytes.sweep';
import { createTenants } from '@almanac/testing/tenant-rows';

const NOW = new Date('2026-12-04T09:00:00Z');
/** Incompressible JSON of `n` bytes: Postgres stores it as sent, plus a varlena header. */
const blob = (n: number) => JSON.stringify(randomBytes(n).toString('base64').slice(0, n - 2));

describe('StoredBytesSweep', () => {
  let db: TestDatabase;
  let tenants: TenantsRepository;
  let a: number;
  let b: number;

  beforeAll(async () => {
    db = await createTestDatabase(3);
    tenants = new TenantsRepository(db.dataSource);
    [a, b] = await createTenants(db.dataSource, 'a', 'b');
    const job = async (tenant: number, key: string, payload: string | null, result: string | null) => {
      const [{ id }] = await db.dataSource.query<{ id: string }[]>(
        `INSERT INTO jobs (tenant_id, key, kind, run_at, state, payload, result) VALUES ($1, $2, 'noop', $3, 'd', $4::json, $5::jsonb) RETURNING id::text AS id`,
        [tenant, key, NOW, payload, result],
      );
      return id;
    };
    // a: 6 jobs of 3,000 B payloads, one with a 5,000 B result kept on the job and on its attempt.
    for (let i = 0; i < 6; i++) await job(a, `a${i}`, blob(3000), null);
    const withResult = await job(a, 'a-result', null, blob(5000));
    await db.dataSource.query(
      `INSERT INTO job_attempts (job_id, attempt, tenant_id, started_at, outcome, result) SELECT id, 1, tenant_id, $2, 'succeeded', result FROM jobs WHERE id = $1`,
      [withResult, NOW],
    );
    // b: small jobs, a schedule with a 20,000 B payload and a stored version of it.
    for (let i = 0; i < 3; i++) await job(b, `b${i}`, '{"n":1}', null);
    const [{ id: schedule }] = await db.dataSource.query<{ id: string }[]>(
      `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, payload) VALUES ($1, 's', 'noop', '* * * * *', 'UTC', $2::jsonb) RETURNING id::text AS id`,
      [b, blob(20_000)],
    );
    await db.dataSource.query(`INSERT INTO schedule_payloads (tenant_id, schedule_id, payload) SELECT tenant_id, id, payload::json FROM schedules WHERE id = $1`, [schedule]);
  });
  afterAll(() => db.drop());

  const stored = async (id: number) => (await tenants.findById(id))!.storage;

  /** Steps (`parallel` at once) until a pass is published; returns the steps it took. */
  async function pass(sweep: StoredBytesSweep, parallel = 1): Promise<number> {
    for (let steps = 1; steps < 200; steps++) {
      const results = await Promise.all(Array.from({ length: parallel }, () => sweep.runOnce(NOW)));
      if (results.some((r) => r.published)) return steps;
    }
    throw new Error('no pass finished');
  }

  it('measures each tenant’s payloads, results (job and attempt), errors and schedule payloads, in small steps', async () => {
    const metricsService = new MetricsService();
    const sweep = new StoredBytesSweep(new TenantStatsRepository(db.dataSource), { rowsPerRun: 2, top: 1 }, new SweepMetrics(metricsService));
    expect((await stored(a)).measuredAt).toBeNull();

    const steps = await pass(sweep);

    expect(steps).toBeGreaterThan(5); // 10 jobs two at a time, then schedules and versions
    const sa = await stored(a);
    const sb = await stored(b);
    // 6 × 3,000 + 2 × 5,000 and a few header bytes each.
    expect(sa.storedBytes).toBeGreaterThanOrEqual(28_000);
    expect(sa.storedBytes).toBeLessThan(28_100);
    expect(sb.storedBytes).toBeGreaterThanOrEqual(40_000); // the schedule and its stored version
    expect(sb.storedBytes).toBeLessThan(40_100);
    expect(sa.measuredAt).toBeInstanceOf(Date);
    const text = await metricsService.registry.getSingleMetricAsString('almanac_tenant_stored_bytes');
    expect(text).toContain(`almanac_tenant_stored_bytes{tenant="${b}"} ${sb.storedBytes}`);
    expect(text).toContain(`almanac_tenant_stored_bytes{tenant="other"} ${sa.storedBytes}`);

    // The next pass measures afresh: the same figures, not doubled.
    await pass(sweep);
    expect((await stored(a)).storedBytes).toBe(sa.storedBytes);
    expect((await stored(b)).storedBytes).toBe(sb.storedBytes);
  });

  it('counts each row once when replicas step at the same time', async () => {
    const sweep = new StoredBytesSweep(new TenantStatsRepository(db.dataSource), { rowsPerRun: 3, top: 10 });
    await pass(sweep);
    const alone = [(await stored(a)).storedBytes, (await stored(b)).storedBytes];

    await pass(sweep, 4);

    expect([(await stored(a)).storedBytes, (await stored(b)).storedBytes]).toEqual(alone);
  });
});
