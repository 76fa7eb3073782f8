import { LOST_ATTEMPT_ERROR } from '@almanac/domain';
import { SweepsRepository } from '@almanac/persistence';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { chargeHandler } from '../handlers';
import { createHarness, DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';

const ROOT = join(__dirname, '../../../..');

describe('a worker killed mid-handler', () => {
  let h: DeliveryHarness;

  beforeAll(async () => {
    h = await createHarness({ handlers: [chargeHandler] });
  });
  afterAll(() => destroyHarness(h));

  it('leaves no effect; after the lease rescue the job runs again and charges exactly once', async () => {
    const [id] = await h.enqueue([{ kind: 'charge', payload: { invoiceId: 'inv-kill', amountCents: 4200 } }]);
    await h.liveWorker({ workerId: 'doomed' }); // its heartbeat, so the dispatcher hands the job over
    await h.hot.runOnce();
    expect(await h.readyIds()).toEqual([id]);

    const child = spawn(process.execPath, ['-r', './bench/lib/register.cjs', 'apps/worker/src/testing/kill-fixture.ts'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: h.db.url, REDIS_URL: h.redis.url, ALMANAC_QUEUE_PREFIX: h.redis.prefix },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (c: Buffer) => c.toString().includes('READY') && resolve());
      child.on('exit', () => reject(new Error(`worker exited before its handler ran: ${stderr}`)));
    });
    // The charge row is written in the job transaction, not committed; the job is running.
    expect(await h.job(id)).toMatchObject({ state: 'r', attempts: 1 });
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    const [{ n: afterKill }] = await h.ds.query(`SELECT count(*)::int AS n FROM charges`);
    expect(afterKill).toBe(0);

    // The lease runs out (moved into the past instead of waiting) and the overdue rule rescues it.
    await h.ds.query(`UPDATE jobs SET lease_until = now() - interval '1 second' WHERE id = $1`, [id]);
    const rescue = await new SweepsRepository(h.ds).rescueExpiredLeases(new Date(), 100, LOST_ATTEMPT_ERROR);
    expect(rescue.requeued.map((r) => r.id)).toEqual([id]);
    await h.hotQueue.enqueue(rescue.requeued, new Date());

    await h.hot.runOnce();
    await h.runWorker(h.worker({ workerId: 'survivor' }));
    const charges = await h.ds.query(`SELECT job_id::text AS job_id, amount_cents::int AS amount FROM charges`);
    expect(charges).toEqual([{ job_id: id, amount: 4200 }]);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 2 });
    expect((await h.attempts(id)).map((a) => [a.attempt, a.outcome, a.worker_id])).toEqual([
      [1, 'lost', null],
      [2, 'succeeded', 'survivor'],
    ]);
  });

  it('killed after claiming ahead of the run time, before the handler started: no attempt is used, no `lost` row', async () => {
    const now = new Date();
    const [id] = await h.enqueue([{ kind: 'charge', maxAttempts: 1, runAt: new Date(now.getTime() + 40), payload: { invoiceId: 'inv-lead', amountCents: 100 } }]);
    // The claim lead: claimed 40 ms before its run time, then the process dies before the start.
    const [claimed] = await h.repo.claimForRun([id], now, 1000, 30_000);
    expect(claimed).toMatchObject({ id, attempt: 1, counted: false });
    expect(await h.job(id)).toMatchObject({ state: 'r', attempts: 0 });

    await h.ds.query(`UPDATE jobs SET lease_until = now() - interval '1 second' WHERE id = $1`, [id]);
    const rescue = await new SweepsRepository(h.ds).rescueExpiredLeases(new Date(), 100, LOST_ATTEMPT_ERROR);
    expect(rescue).toMatchObject({ dead: 0, requeued: [expect.objectContaining({ id })] });
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 0 });

    // Its one attempt is still there for a real run.
    const [again] = await h.repo.claimForRun([id], new Date(now.getTime() + 100), 1000, 30_000);
    expect(again).toMatchObject({ attempt: 1, counted: true });
    expect(await h.job(id)).toMatchObject({ state: 'r', attempts: 1 });
    expect(await h.attempts(id)).toEqual([]);
  });

  it('a claim ahead whose row was rescued and claimed again meanwhile does not count, and must not run', async () => {
    const now = new Date();
    const [id] = await h.enqueue([{ kind: 'charge', runAt: new Date(now.getTime() + 40), payload: { invoiceId: 'inv-race', amountCents: 100 } }]);
    const [stale] = await h.repo.claimForRun([id], now, 1000, 30_000);
    await h.ds.query(`UPDATE jobs SET state = 'q', lease_until = NULL WHERE id = $1`, [id]); // rescued
    const [fresh] = await h.repo.claimForRun([id], new Date(now.getTime() + 100), 1000, 30_000);
    expect(fresh.counted).toBe(true);
    expect(await h.repo.startClaimed([{ id, attempt: stale.attempt, leaseUntil: stale.leaseUntil }], new Date())).toEqual(new Set());
    expect(await h.job(id)).toMatchObject({ state: 'r', attempts: 1 });
    // The claim it belongs to counts it as its handler starts; a second count (a retry after a
    // lost reply) finds it counted already and changes nothing.
    const [{ id: other }] = await h.ds.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state) VALUES (1, 'lead-2', 'charge', now() + interval '1 minute', 'q') RETURNING id::text AS id`);
    const [ahead] = await h.repo.claimForRun([other], new Date(), 120_000, 30_000);
    const ref = { id: other, attempt: ahead.attempt, leaseUntil: ahead.leaseUntil };
    expect(await h.repo.startClaimed([ref], new Date())).toEqual(new Set([other]));
    expect(await h.repo.startClaimed([ref], new Date())).toEqual(new Set([other]));
    expect(await h.job(other)).toMatchObject({ state: 'r', attempts: 1 });
  });
});
