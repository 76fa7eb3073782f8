import type { HandlerOutcome, JsonValue } from '@almanac/domain';
import { completed, defineHandler, discard, type HandlerContext, type HandlerDefinition, retry, snooze } from '@almanac/kinds';
import { chargeHandler, noopHandler } from './built-in-kinds';
import type { DeliveryHarness } from './delivery-harness';

/**
 * What the worker executor's specs (libs/worker-runtime/src/executor.*.spec.ts) share: handlers
 * the test drives, the faults it puts in the claim and the outcome writes, and small waits. The
 * handlers' state lives here as the specs read it; each spec renews it before each test
 * (renewHandlerState).
 */

/** A handler the test controls: it reports when it started and finishes when told. */
export function gate() {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let onStart!: () => void;
  const started = new Promise<void>((r) => (onStart = r));
  return { release, released, started, onStart };
}
type Gate = ReturnType<typeof gate>;

export async function chargeCount(h: DeliveryHarness): Promise<number> {
  const [{ n }] = await h.ds.query(`SELECT count(*)::int AS n FROM charges`);
  return n as number;
}

/** What node-pg throws when Postgres goes away mid-statement (admin shutdown). */
export const connectionLost = () => Object.assign(new Error('Connection terminated unexpectedly'), { code: '57P01' });

/** The next claim commits, then its reply is lost: the caller sees connectionLost. */
export function claimReplyLostOnce(h: DeliveryHarness): void {
  const real = h.repo.claim.bind(h.repo);
  jest.spyOn(h.repo, 'claim').mockImplementationOnce(async (...args: Parameters<typeof real>) => {
    await real(...args);
    throw connectionLost();
  });
}

export const flaky = { calls: 0, mode: 'throw' as 'throw' | 'retry' | 'discard' | 'retry-later' | 'snooze' };
const flakyHandler = defineHandler<unknown>({
  kind: 'flaky',
  timeoutMs: 5000,
  handle: async () => {
    flaky.calls++;
    switch (flaky.mode) {
      case 'throw':
        throw new Error(`boom ${'x'.repeat(5000)}`);
      case 'retry':
        return retry({ delayMs: 0, reason: 'not yet' });
      case 'retry-later':
        return retry({ delayMs: 3 * 24 * 3600_000, reason: 'in three days' });
      case 'discard':
        return discard('bad input');
      case 'snooze':
        return snooze({ delayMs: 0, reason: 'held by another run' });
    }
  },
});

export let slowGate = gate();
/** Finishes when `slow()` opens (slowGate, unless a spec keeps a gate of its own). */
export const slowHandlerOn = (slow: () => Gate) =>
  defineHandler<unknown>({
    kind: 'slow',
    timeoutMs: 60_000,
    handle: async () => {
      slow().onStart();
      await slow().released;
      return completed({ slow: true });
    },
  });
export const slowHandler = slowHandlerOn(() => slowGate);

export let progressGate = gate();
/** Reports progress, waits to be told to go on, reports again and finishes. */
const progressHandler = defineHandler<{ note?: string } | null>({
  kind: 'progress',
  timeoutMs: 60_000,
  handle: async (ctx, payload) => {
    const { progress } = ctx; // ctx's functions work destructured, as handlers use them
    progress(40, payload?.note?.replace('{NUL}', '\u0000') ?? 'rows 400 of 1000'); // a payload cannot hold U+0000
    progressGate.onStart();
    await progressGate.released;
    ctx.progress(90);
    expect(() => ctx.progress(101)).toThrow(RangeError);
    return completed();
  },
});

/** Ends as its payload says, with values Postgres cannot store when asked (a NUL in text), after a write through ctx.tx() with `tx`. */
const poisonHandler = defineHandler<{ nul?: 'result' | 'error'; bad?: 'bigint' | 'shape' | 'huge' | 'surrogate'; tx?: boolean }>({
  kind: 'poison',
  timeoutMs: 5000,
  handle: async (ctx, payload) => {
    if (payload?.tx) await (await ctx.tx()).query(`INSERT INTO poison_writes VALUES (1)`);
    if (payload?.nul === 'error') throw new Error('binary body \u0000 in the message');
    if (payload?.bad === 'bigint') return completed({ cents: 10n } as unknown as JsonValue); // a JS handler's result TypeScript did not check
    if (payload?.bad === 'shape') return { type: 'done' } as unknown as HandlerOutcome;
    if (payload?.bad === 'huge') return completed({ blob: 'x'.repeat(1_100_000) });
    if (payload?.bad === 'surrogate') return completed({ cut: 'half an emoji \ud83d' });
    return completed({ note: payload?.nul === 'result' ? 'a\u0000b' : 'fine' });
  },
});

export let stuckCtx: HandlerContext | undefined;
const stuckHandler = defineHandler<unknown>({
  kind: 'stuck',
  timeoutMs: 50,
  handle: (ctx) => ((stuckCtx = ctx), new Promise(() => undefined)), // ignores its signal on purpose
});

export let greedy = gate();
/** Writes through the EntityManager ctx.tx() gave it, deaf to its signal, until a write fails; then says it stopped. */
const greedyHandler = defineHandler<unknown>({
  kind: 'greedy',
  timeoutMs: 50,
  handle: async (ctx) => {
    const em = await ctx.tx();
    try {
      for (;;) await em.query(`INSERT INTO greedy_writes VALUES (1)`);
    } finally {
      greedy.onStart();
    }
  },
});

export let lockedPid: number | undefined;
/** Waits in its transaction for a row the test holds locked, past its timeout. */
const lockedHandler = defineHandler<unknown>({
  kind: 'locked',
  timeoutMs: 100,
  handle: async (ctx) => {
    const em = await ctx.tx();
    lockedPid = (await em.query(`SELECT pg_backend_pid() AS pid`))[0].pid;
    await em.query(`SELECT 1 FROM lock_target FOR UPDATE`);
    return completed();
  },
});

/** Its branches' writes once all have settled (a branch fails while the others still write). */
export const scatter = { settled: Promise.resolve() as Promise<unknown> };
/** Writes through ctx.tx() in parallel branches, one of which throws early: Promise.all rejects while the rest still write. */
const scatterHandler = defineHandler<unknown>({
  kind: 'scatter',
  timeoutMs: 5000,
  handle: async (ctx) => {
    const em = await ctx.tx();
    const branches = Array.from({ length: 20 }, async (_, i) => {
      if (i === 0) throw new Error('item 0 failed');
      for (let k = 0; k < 5; k++) await em.query(`INSERT INTO scatter_writes VALUES ($1)`, [i]);
    });
    scatter.settled = Promise.allSettled(branches);
    await Promise.all(branches);
    return completed();
  },
});

/** Throws what String() cannot turn into text (with `revoked`, what nothing can read), with its transaction open. */
const oddThrowHandler = defineHandler<{ revoked?: boolean } | null>({
  kind: 'odd-throw',
  timeoutMs: 5000,
  handle: async (ctx, payload) => {
    await (await ctx.tx()).query(`SELECT 1`);
    if (payload?.revoked) {
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      throw proxy as Error;
    }
    throw Object.create(null) as Error;
  },
});

/** Calls its effect once (ctx.effects.once), the call answering a value Postgres cannot store (a NUL in text). */
export const oddEffect = { calls: 0 };
const oddEffectHandler = defineHandler<unknown>({
  kind: 'odd-effect',
  timeoutMs: 5000,
  handle: async (ctx) => {
    await ctx.effects.once('send', async () => (oddEffect.calls++, { messageId: 'a\u0000b' }));
    return completed();
  },
});

/** The handlers every executor spec's harness registers (`slow`: the one on slowGate unless given). */
export function executorHandlers(slow: HandlerDefinition = slowHandler): HandlerDefinition[] {
  return [noopHandler, chargeHandler, flakyHandler, slow, stuckHandler, poisonHandler, progressHandler, greedyHandler, lockedHandler, scatterHandler, oddThrowHandler, oddEffectHandler];
}

/** Fresh gates and call counts for the next test. */
export function renewHandlerState(): void {
  flaky.calls = 0;
  oddEffect.calls = 0;
  slowGate = gate();
  progressGate = gate();
  greedy = gate();
}

/** What `p` settled with if it has settled, else 'no answer' (a settled promise wins the race). */
export const answerByNow = <T>(p: Promise<T>) => Promise.race([p, Promise.resolve('no answer' as const)]);

/** Polls `look` until it is true, for at most `ms` (a real async effect, no timer of ours to drive). */
export async function eventually(look: () => Promise<boolean>, ms = 5000): Promise<void> {
  for (const until = Date.now() + ms; !(await look()); ) if (Date.now() > until) throw new Error(`not true within ${ms} ms`);
}
