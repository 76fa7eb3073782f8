import { completed, defineHandler, HandlerRegistry, KindAssertion, kindRegistrations, KindRoutes } from '@almanac/kinds';
import { KindsRepository } from '@almanac/persistence';
import { createHarness, DeliveryHarness, destroyHarness, type WorkerRig } from '@almanac/testing/delivery-harness';
import { pushHints } from '@almanac/testing/ready-hints';
import { Type } from '@sinclair/typebox';

/** Build A's definition of `notify`, and build B's, which adds an optional `note` (the shipped handlers' additionalProperties: false). */
const ranBy: string[] = [];
const build = (name: string, schema: ReturnType<typeof Type.Object>) =>
  defineHandler({ kind: 'notify', timeoutMs: 5000, payloadSchema: schema, handle: async () => (ranBy.push(name), completed()) });
const buildA = build('A', Type.Object({ to: Type.String() }, { additionalProperties: false }));
const buildB = build('B', Type.Object({ to: Type.String(), note: Type.Optional(Type.String()) }, { additionalProperties: false }));

describe('a worker rolling update that widens a payload schema (Postgres, Redis)', () => {
  let h: DeliveryHarness;
  beforeEach(async () => {
    ranBy.length = 0;
    h = await createHarness({ handlers: [buildA] });
  });
  afterEach(() => destroyHarness(h));

  /** A worker of one build in the default pool, with the kind assertion its process runs. */
  function workerOf(handler: typeof buildA, id: string): { rig: WorkerRig; assertion: KindAssertion } {
    const registry = new HandlerRegistry([handler]);
    const registrations = kindRegistrations(registry, KindRoutes.forHandlers(new Map(), [handler]), ['default']);
    return { rig: h.worker({ workerId: id, registry }), assertion: new KindAssertion(new KindsRepository(h.ds), registrations, id, h.logger, registry) };
  }
  /** A job only B's schema accepts: A's worker snoozes it (no attempt spent, its one attempt left) and B's runs it. */
  async function leftByAForB(a: WorkerRig, b: WorkerRig): Promise<void> {
    const [id] = await h.enqueue([{ kind: 'notify', payload: { to: 'x', note: 'hi' }, maxAttempts: 1 }]);
    await runNow(a, id);
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 1 });
    expect((await h.attempts(id)).map((x) => x.outcome)).toEqual(['snoozed']);
    expect((await h.attempts(id))[0].error).toMatch(/notify payload: .*another live definition of the kind is in use/);
    await runNow(b, id);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 2 });
    expect(ranBy).toEqual(['B']);
  }
  /** Time passes for the registry: every definition's times move `seconds` into the past. */
  const later = (seconds: number) =>
    h.ds.query(`UPDATE kind_definitions SET first_seen_at = first_seen_at - $1 * interval '1 second', asserted_at = asserted_at - $1 * interval '1 second'`, [seconds]);
  /** The job due now, its hint in the pool, and one turn of `rig` (a snoozed job's own hint is due later). */
  async function runNow(rig: WorkerRig, id: string): Promise<void> {
    const runAt = new Date(Date.now() - 1000);
    await h.ds.query(`UPDATE jobs SET run_at = $2 WHERE id = $1`, [id, runAt]);
    await pushHints(h.ready, 'default', [h.hint(id, { kind: 'notify', runAt })]);
    expect(await h.runWorker(rig)).toBe(1);
  }

  it("an old build's worker leaves a payload only the new definition accepts to the new build's workers, spending no attempt; once the new build is gone it discards it", async () => {
    const a = workerOf(buildA, 'w-a');
    const b = workerOf(buildB, 'w-b');
    await a.assertion.runOnce();
    await later(10);
    await b.assertion.runOnce(); // the registry (and so the API's check) now has B's schema
    await a.assertion.runOnce(); // A learns its definition is superseded

    await leftByAForB(a.rig, b.rig);

    // A rollback: B's workers stopped asserting, so A's definition is the one in use again (and the API's).
    const [late] = await h.enqueue([{ kind: 'notify', payload: { to: 'x', note: 'hi' } }]);
    await later(100);
    await a.assertion.runOnce();
    await runNow(a.rig, late);
    expect(await h.job(late)).toMatchObject({ state: 'x', attempts: 1 });
    expect((await h.attempts(late)).map((x) => x.outcome)).toEqual(['discarded']);
    expect(ranBy).toEqual(['B']);
  });

  it("an old build's worker not yet told its definition is superseded reads the registry before discarding: a payload only the newer definition accepts is left to that build", async () => {
    const a = workerOf(buildA, 'w-a');
    const b = workerOf(buildB, 'w-b');
    await a.assertion.runOnce();
    await later(10);
    await b.assertion.runOnce(); // the registry has B's schema; A's next assertion is up to 30 s away

    await leftByAForB(a.rig, b.rig);
  });

  it('a payload no definition accepts is still discarded at its first attempt, once the registry is read', async () => {
    const a = workerOf(buildA, 'w-a');
    await a.assertion.runOnce();
    const ids = await h.enqueue([{ kind: 'notify', payload: { to: 1 } }, { kind: 'notify', payload: { to: 'x', cc: 'y' } }]);
    for (const id of ids) {
      await runNow(a.rig, id);
      expect(await h.job(id)).toMatchObject({ state: 'x', attempts: 1 });
      expect((await h.attempts(id)).map((x) => [x.outcome, x.error])).toEqual([['discarded', expect.stringMatching(/^InvalidPayloadError: notify payload: /)]]);
    }
    expect(ranBy).toEqual([]);
  });
});
