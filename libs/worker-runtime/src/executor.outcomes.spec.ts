import { createHarness, type DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { executorHandlers, flaky, renewHandlerState } from '@almanac/testing/executor-rig';

/** The worker executor's outcomes: what a run's end writes (done, retry, discard, snooze, a value Postgres refuses, a kind or payload it cannot run). */
describe('worker executor', () => {
  let h: DeliveryHarness;

  beforeEach(async () => {
    renewHandlerState();
    h = await createHarness({ handlers: executorHandlers() });
  });
  afterEach(() => destroyHarness(h));

  it('runs a job end to end and records the attempt (group-committed, no handler transaction)', async () => {
    const w = h.worker({ workerId: 'w-1' });
    const ids = await h.enqueue([{ kind: 'noop' }, { kind: 'noop' }, { kind: 'noop' }]);
    await h.hot.runOnce();
    expect(await h.runWorker(w)).toBe(3);
    for (const id of ids) {
      const row = await h.job(id);
      expect(row).toMatchObject({ state: 'd', attempts: 1, lease_until: null, last_error: null });
      expect(row.finished_at).toBeInstanceOf(Date);
      expect(await h.attempts(id)).toEqual([
        expect.objectContaining({ attempt: 1, outcome: 'succeeded', worker_id: 'w-1', error: null }),
      ]);
    }
    const exec = await w.metrics.executions.get();
    expect(exec.values).toEqual([expect.objectContaining({ labels: { kind: 'noop', outcome: 'succeeded' }, value: 3 })]);
    const lag = await w.metrics.lag.get();
    expect(lag.values.find((v) => v.metricName === 'almanac_dispatch_lag_seconds_count')).toMatchObject({ labels: { pool: 'default' }, value: 3 });
  });

  it("an outcome Postgres refuses (a NUL in its result or error, a result that is not JSON) is written without it, one that is not an outcome fails its run; the rest of its group commit is written whole", async () => {
    const w = h.worker({ workerId: 'w-1' });
    const ids = await h.enqueue([
      ...Array.from({ length: 6 }, () => ({ kind: 'poison', payload: {} })),
      { kind: 'poison', payload: { nul: 'result' } },
      { kind: 'poison', payload: { nul: 'error' } },
      { kind: 'poison', payload: { bad: 'bigint' } },
      { kind: 'poison', payload: { bad: 'shape' } },
    ]);
    await h.hot.runOnce();
    expect(await h.runWorker(w)).toBe(10);
    for (const id of ids.slice(0, 6)) expect(await h.job(id)).toMatchObject({ state: 'd', result: { note: 'fine' } });
    expect(await h.job(ids[6])).toMatchObject({ state: 'd', result: null }); // it succeeded: its effects happened
    expect((await h.attempts(ids[6]))[0]).toMatchObject({ outcome: 'succeeded', error: expect.stringContaining('could not be stored (SQLSTATE 22P05)') });
    expect(await h.job(ids[7])).toMatchObject({ state: 'q', attempts: 1, last_error: expect.stringContaining('could not be stored (SQLSTATE 22021)') });
    // A result JSON cannot hold is set aside like a NUL; what is not an outcome fails its run. Neither fails the batch.
    expect((await h.attempts(ids[8]))[0]).toMatchObject({ outcome: 'succeeded', error: expect.stringContaining('could not be stored (SQLSTATE 22032)') });
    expect(await h.job(ids[9])).toMatchObject({ state: 'q', attempts: 1, last_error: expect.stringContaining('TypeError: the handler returned an object with type "done"') });
    const aside = await w.metrics.setAside.get();
    expect(aside.values.filter((v) => v.value > 0)).toEqual([expect.objectContaining({ labels: { statement: 'completion' }, value: 3 })]);
  });

  it("a result over 1 MiB of JSON is written without it, the rest of its group commit whole; in the handler's transaction, a refused result (U+0000, a lone surrogate, not JSON, too large) leaves the handler's writes to commit", async () => {
    await h.ds.query(`CREATE TABLE poison_writes (n int)`);
    const w = h.worker({ workerId: 'w-1' });
    const ids = await h.enqueue([
      { kind: 'poison', payload: {} },
      { kind: 'poison', payload: { bad: 'huge' } },
      { kind: 'poison', payload: { nul: 'result', tx: true } },
      { kind: 'poison', payload: { bad: 'bigint', tx: true } },
      { kind: 'poison', payload: { bad: 'huge', tx: true } },
      { kind: 'poison', payload: { bad: 'surrogate', tx: true } },
    ]);
    await h.hot.runOnce();
    expect(await h.runWorker(w)).toBe(6);
    expect(await h.job(ids[0])).toMatchObject({ state: 'd', result: { note: 'fine' } });
    const codes = ['22001', '22P05', '22032', '22001', '22P02'];
    for (const [i, code] of codes.entries()) {
      // Before: the huge one was stored whole; in a transaction, a refused result failed the attempt, and each retry again.
      expect(await h.job(ids[i + 1])).toMatchObject({ state: 'd', attempts: 1, result: null });
      expect((await h.attempts(ids[i + 1]))[0]).toMatchObject({ outcome: 'succeeded', error: expect.stringContaining(`could not be stored (SQLSTATE ${code})`) });
    }
    expect((await h.ds.query(`SELECT count(*)::int AS n FROM poison_writes`))[0].n).toBe(4);
  });

  it('a thrown exception retries with backoff; the last attempt makes the job dead', async () => {
    flaky.mode = 'throw';
    const [id] = await h.enqueue([{ kind: 'flaky', maxAttempts: 2 }]);
    const w = h.worker({ retryPolicy: { baseMs: 10_000, factor: 2, maxMs: 60_000 } });
    await h.hot.runOnce();
    const before = Date.now();
    await h.runWorker(w);
    const row = await h.job(id);
    expect(row).toMatchObject({ state: 'q', attempts: 1 });
    // equal jitter: between half and all of base
    expect(row.run_at.getTime()).toBeGreaterThanOrEqual(before + 5000 - 50);
    expect(row.run_at.getTime()).toBeLessThanOrEqual(Date.now() + 10_000);
    expect(row.last_error!.length).toBeLessThanOrEqual(2000);
    expect(await h.hotIds('delayed')).toEqual([id]); // its hint, for the retry's time
    // Skip the wait: make it due now, with a hint for now.
    await h.ds.query(`UPDATE jobs SET run_at = now() WHERE id = $1`, [id]);
    await h.hotQueue.enqueue([h.hint(id, { kind: 'flaky' })], new Date());
    await h.hot.runOnce();
    await h.runWorker(w);
    const dead = await h.job(id);
    expect(dead).toMatchObject({ state: 'x', attempts: 2 });
    expect(dead.finished_at).toBeInstanceOf(Date);
    expect(dead.last_error).toMatch(/^Error: boom/);
    expect((await h.attempts(id)).map((a) => a.outcome)).toEqual(['failed', 'failed']);
    expect(flaky.calls).toBe(2);
  });

  it('retry() with a delay beyond the hot horizon makes a cold row with no Redis entry; discard() makes it dead', async () => {
    flaky.mode = 'retry-later';
    const [later, gone] = await h.enqueue([{ kind: 'flaky' }, { kind: 'flaky' }]);
    const w = h.worker();
    await h.hot.runOnce();
    await h.runWorker(w, 1);
    flaky.mode = 'discard';
    await h.runWorker(w, 1);
    const rows = [await h.job(later), await h.job(gone)];
    const cold = rows.find((r) => r.state === 's')!;
    expect(cold.run_at.getTime()).toBeGreaterThan(Date.now() + 2 * 24 * 3600_000);
    expect([...(await h.hotIds('delayed')), ...(await h.hotIds('waiting'))]).not.toContain(cold.id);
    expect(rows.find((r) => r.state === 'x')).toMatchObject({ last_error: 'bad input', attempts: 1 });
  });

  it('a retry is not swallowed by a stale hint of the same row still waiting in the hot queue', async () => {
    flaky.mode = 'retry';
    const seed = { kind: 'flaky', maxAttempts: 5 };
    const [id] = await h.enqueue([seed]);
    const w = h.worker();
    await h.hot.runOnce();
    // A stale hint of the row for tomorrow (it was rescheduled and back): the retry's hint is its own.
    await h.hotQueue.enqueue([h.hint(id, { ...seed, runAt: new Date(Date.now() + 86_400_000) })], new Date());
    await h.runWorker(w);
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 1 });
    expect(await h.hotIds('waiting')).toEqual([id]);
    expect(await h.hot.runOnce()).toBe(1);
    await h.runWorker(w);
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 2 });
  });

  it('retry({delayMs: 0}) goes straight back on the hot queue and runs again', async () => {
    flaky.mode = 'retry';
    const [id] = await h.enqueue([{ kind: 'flaky', maxAttempts: 5 }]);
    const w = h.worker();
    await h.hot.runOnce();
    await h.runWorker(w);
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 1, last_error: 'not yet' });
    expect(await h.hot.runOnce()).toBe(1);
    await h.runWorker(w);
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 2 });
  });

  it('snooze() brings the job back without spending an attempt: its maxAttempts grows by one', async () => {
    flaky.mode = 'snooze';
    const [id] = await h.enqueue([{ kind: 'flaky', maxAttempts: 1 }]);
    const w = h.worker();
    await h.hot.runOnce();
    await h.runWorker(w);
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 1, last_error: 'held by another run' });
    expect((await h.attempts(id)).map((a) => a.outcome)).toEqual(['snoozed']);
    const exec = (await w.metrics.executions.get()).values;
    expect(exec).toEqual([expect.objectContaining({ labels: { kind: 'flaky', outcome: 'snoozed' }, value: 1 })]);
    expect((await w.metrics.deadJobs.get()).values).toEqual([expect.objectContaining({ value: 0 })]); // exported at 0 before the first death
    // The one attempt it was given is still its own: a failure now retries once more, then it is dead.
    flaky.mode = 'throw';
    expect(await h.hot.runOnce()).toBe(1);
    await h.runWorker(w);
    expect(await h.job(id)).toMatchObject({ state: 'x', attempts: 2 });
    expect((await w.metrics.deadJobs.get()).values).toEqual([expect.objectContaining({ value: 1 })]); // the failure that ended it, not the retried one before
    const [{ max_attempts }] = await h.ds.query(`SELECT max_attempts FROM jobs WHERE id = $1`, [id]);
    expect(max_attempts).toBe(2);
  });

  it("a worker without the handler of a job's kind leaves it queued, no attempt spent, and the overdue sweep offers it again", async () => {
    const [id] = await h.enqueue([{ kind: 'mystery', maxAttempts: 1 }]);
    const w = h.worker();
    await h.hot.runOnce();
    await h.runWorker(w);
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 0, last_error: null });
    expect(await h.attempts(id)).toEqual([]);
    expect((await w.metrics.dropped.get()).values).toEqual([expect.objectContaining({ labels: { reason: 'unknown_kind' }, value: 1 })]);
    // Its hint is gone (no copy cycles through Redis): past the sweep's grace the row is lost, once.
    expect((await h.hotQueue.held()).filter((x) => x.hint.id === id)).toEqual([]);
    const row = { id, tenantId: 1, kind: 'mystery', dueMs: (await h.job(id)).run_at.getTime() };
    expect((await h.lostHints().of([row], Date.now() + 60_000)).map((x) => x.id)).toEqual([id]);
  });

  it('an invalid payload (a row stored before its kind had a schema) is discarded, not retried, naming the fields', async () => {
    const [id] = await h.enqueue([{ kind: 'charge', payload: { invoiceId: '', amountCents: -1 } }]);
    const w = h.worker();
    await h.hot.runOnce();
    await h.runWorker(w);
    expect(await h.job(id)).toMatchObject({ state: 'x', attempts: 1 });
    expect((await h.job(id)).last_error).toMatch(/charge payload: payload.invoiceId must NOT have fewer than 1 characters; payload.amountCents must be >= 1/);
    expect((await h.attempts(id))[0].outcome).toBe('discarded');
    expect((await w.metrics.deadJobs.get()).values).toEqual([expect.objectContaining({ value: 1 })]);
  });
});
