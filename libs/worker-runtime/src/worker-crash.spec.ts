import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { SweepsRepository } from '@almanac/persistence';
import { chargeHandler } from '@almanac/testing/built-in-kinds';
import { createHarness, DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';

const ROOT = join(__dirname, '../../..');

describe('a worker that dies', () => {
  let h: DeliveryHarness;

  beforeEach(async () => {
    h = await createHarness({ handlers: [chargeHandler] });
  });
  afterEach(() => destroyHarness(h));

  const charge = (invoiceId: string) => ({ kind: 'charge', payload: { invoiceId, amountCents: 4200 } });

  it('mid-handler leaves no effect; found dead, its job goes back with its hint and charges exactly once', async () => {
    const [id] = await h.enqueue([charge('inv-kill')]);
    await h.hot.runOnce();
    expect(await h.readyIds()).toEqual([id]);

    const child = spawn(process.execPath, ['-r', './bench/lib/register.cjs', 'test/support/worker-kill-fixture.ts'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: h.db.url, REDIS_URL: h.redis.url, ALMANAC_QUEUE_PREFIX: h.redis.prefix },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    const doomed = await new Promise<number>((resolve, reject) => {
      child.stdout.on('data', (c: Buffer) => {
        const m = /READY (\d+)/.exec(c.toString());
        if (m) resolve(Number(m[1]));
      });
      child.on('exit', () => reject(new Error(`worker exited before its handler ran: ${stderr}`)));
    });
    // The charge row is written in the job transaction, not committed; the job is running, claimed by the doomed worker.
    expect(await h.job(id)).toMatchObject({ state: 'r', attempts: 1, claimed_by: doomed });
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    const [{ n: afterKill }] = await h.ds.query(`SELECT count(*)::int AS n FROM charges`);
    expect(afterKill).toBe(0);

    // Its heartbeat stood still (HeartbeatWatch decides when; here, at once): the rescue puts its work back.
    const { workers } = await h.workers.list();
    const rescue = await h.rescue.putBack(workers.filter((w) => w.id === doomed), new Date());
    expect(rescue).toMatchObject({ workers: 1, requeued: 1, dead: 0 });
    expect(await h.readyIds()).toEqual([id]); // its hint, from the dead worker's taken hash
    expect((await h.workers.list()).workers).toEqual([]);

    await h.runWorker(h.worker({ workerId: 'survivor' }));
    const charges = await h.ds.query(`SELECT job_id::text AS job_id, amount_cents::int AS amount FROM charges`);
    expect(charges).toEqual([{ job_id: id, amount: 4200 }]);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 2 });
    expect((await h.attempts(id)).map((a) => [a.attempt, a.outcome, a.worker_id])).toEqual([
      [1, 'lost', null],
      [2, 'succeeded', 'survivor'],
    ]);
  });

  it('after taking hints and before claiming them uses no attempt: the hints come back with the rescue', async () => {
    const ids = await h.enqueue([{ ...charge('inv-a'), maxAttempts: 1 }, { ...charge('inv-b'), maxAttempts: 1 }]);
    await h.hot.runOnce();
    const doomed = h.worker({ workerId: 'doomed' });
    await doomed.identity.register();
    const took = await h.ready.take('default', 10, Date.now(), String(doomed.identity.id));
    expect(took.hints.map((x) => x.id)).toEqual([...ids].sort()); // due together: id order (ids of one ms are not in insertion order)
    expect(await h.readyIds()).toEqual([]); // only in its taken hash now

    const { workers } = await h.workers.list();
    expect(await h.rescue.putBack(workers, new Date())).toMatchObject({ workers: 1, requeued: 0, dead: 0 });
    expect(await h.readyIds()).toEqual([...ids].sort());
    await h.runWorker(h.worker({ workerId: 'survivor' }));
    for (const id of ids) expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
    const [{ lost }] = await h.ds.query(`SELECT count(*)::int AS lost FROM job_attempts WHERE outcome = 'lost'`);
    expect(lost).toBe(0);
  });

  it('the rescue sweep puts back the work of the workers its watch finds dead, and no other', async () => {
    const [id] = await h.enqueue([charge('inv-c')]);
    await h.hot.runOnce();
    const doomed = h.worker({ workerId: 'doomed' });
    await doomed.identity.register();
    await h.ready.take('default', 10, Date.now(), String(doomed.identity.id));
    const alive = await h.liveWorker({ workerId: 'alive' });
    expect(await h.rescueWith(() => [doomed.identity.id]).runOnce(new Date())).toMatchObject({ workers: 1 });
    expect(await h.readyIds()).toEqual([id]);
    expect((await h.workers.list()).workers.map((x) => x.id)).toEqual([alive.identity.id]);
  });

  /** Ingest's hints leave the hot queue for the pool and are lost there: what the rescue sends is all there is. */
  const loseHints = async () => {
    await h.hot.runOnce();
    for (const key of await h.redis.connection.keys(`${h.ready.base('default')}:*`)) await h.redis.connection.del(key);
  };

  it("hints a dead worker's rows with the next run when a run could not (Redis refusing): they do not wait for the overdue sweep", async () => {
    const [id] = await h.enqueue([charge('inv-d')]);
    await loseHints();
    const doomed = h.worker({ workerId: 'doomed' });
    await doomed.identity.register();
    await h.ds.query(`UPDATE jobs SET state = 'r', attempts = 1, lease_until = now() + interval '30 seconds', claimed_by = $2 WHERE id = $1`, [id, doomed.identity.id]);
    const rescue = h.rescueWith(() => [doomed.identity.id]);
    jest.spyOn(h.hotQueue, 'enqueue').mockRejectedValueOnce(new Error('OOM command not allowed when used memory > maxmemory'));
    await expect(rescue.runOnce(new Date())).rejects.toThrow(/OOM/);
    expect(await h.job(id)).toMatchObject({ state: 'q' }); // put back, but with no hint
    await rescue.runOnce(new Date());
    expect([...(await h.hotIds('waiting')), ...(await h.hotIds('delayed'))]).toContain(id);
    jest.restoreAllMocks();
  });

  it("hints the rows of a rescue batch that committed when a later batch of the same run failed", async () => {
    const ids = await h.enqueue([charge('inv-e'), charge('inv-f')]);
    await loseHints();
    const doomed = h.worker({ workerId: 'doomed' });
    await doomed.identity.register();
    await h.ds.query(`UPDATE jobs SET state = 'r', attempts = 1, lease_until = now() + interval '30 seconds', claimed_by = $2 WHERE id = ANY($1::bigint[])`, [ids, doomed.identity.id]);
    const rescue = h.rescueWith(() => [doomed.identity.id], 1);
    const first = SweepsRepository.prototype.rescueRunning;
    const batches = jest.spyOn(SweepsRepository.prototype, 'rescueRunning');
    batches.mockImplementationOnce(first).mockRejectedValueOnce(new Error('canceling statement due to statement timeout'));
    await expect(rescue.runOnce(new Date())).rejects.toThrow(/statement timeout/);
    batches.mockRestore();
    await rescue.runOnce(new Date());
    const hinted = [...(await h.hotIds('waiting')), ...(await h.hotIds('delayed'))];
    for (const id of ids) expect(hinted).toContain(id); // the first batch's row too, which no later run finds running
  });

  it('a worker that beat after the watch judged it keeps its row', async () => {
    const w = await h.liveWorker({ workerId: 'alive' });
    const { workers } = await h.workers.list();
    await w.heartbeat.runOnce();
    expect(await h.workers.remove(workers[0].id, workers[0].beatAtMs)).toBe(false);
    expect((await h.workers.list()).workers.map((x) => x.id)).toEqual([workers[0].id]);
  });
});
