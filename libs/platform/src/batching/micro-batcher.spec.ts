import { MicroBatcher, RUN_ALONE } from './micro-batcher';

/** An echoing batcher, one batch in flight, whose first batch holds until `release()`; `batches` records each. */
function gatedBatcher(maxBatch: number) {
  const batches: number[][] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const b = new MicroBatcher(async (xs: number[]) => {
    batches.push(xs);
    if (batches.length === 1) await gate;
    return xs;
  }, { maxBatch, maxInFlight: 1 });
  return { b, batches, release };
}

/** A batcher sharing batches between keys (the first letter), one in flight, whose first batch holds until `release()`; `calls` records each batch. */
function gatedSharing(opts: { maxShare?: number; alone?: (x: string) => boolean } = {}) {
  const calls: string[][] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const b = new MicroBatcher(
    async (xs: string[]) => {
      calls.push(xs);
      if (calls.length === 1) await gate;
      return xs;
    },
    { maxBatch: 6, maxInFlight: 1, keyOf: (x: string) => x[0], shareBatches: true, ...opts },
  );
  return { b, calls, release };
}

describe('MicroBatcher', () => {
  it('sends items submitted in the same tick as one batch, answers each in order', async () => {
    const batches: number[][] = [];
    const b = new MicroBatcher(async (xs: number[]) => {
      batches.push(xs);
      return xs.map((x) => x * 10);
    }, { maxBatch: 100, maxInFlight: 1 });
    const out = await Promise.all([1, 2, 3].map((x) => b.submit(x)));
    expect(out).toEqual([10, 20, 30]);
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it('queues behind a flush in flight and splits at maxBatch', async () => {
    const { b, batches, release } = gatedBatcher(2);
    const first = b.submit(0);
    await new Promise((r) => setImmediate(r));
    const rest = [1, 2, 3, 4, 5].map((x) => b.submit(x));
    release();
    await Promise.all([first, ...rest]);
    expect(batches).toEqual([[0], [1, 2], [3, 4], [5]]);
    await b.drain();
    expect(b.pending).toBe(0);
  });

  it('drops an item whose signal aborts while it waits for a batch; an item already in a batch runs on', async () => {
    const { b, batches, release } = gatedBatcher(10);
    const deadline = new AbortController();
    const running = b.submit(0, deadline.signal);
    await new Promise((r) => setImmediate(r));
    const waiting = b.submit(1, deadline.signal);
    const other = b.submit(2);
    deadline.abort(new Error('past the deadline'));
    await expect(waiting).rejects.toThrow('past the deadline');
    expect(b.pending).toBe(2);
    release();
    await expect(running).resolves.toBe(0);
    await expect(other).resolves.toBe(2);
    expect(batches).toEqual([[0], [2]]);
    await expect(b.submit(3, deadline.signal)).rejects.toThrow('past the deadline');
    await b.drain();
  });

  it('rejects every item of a failed batch and keeps working', async () => {
    let fail = true;
    const b = new MicroBatcher(async (xs: number[]) => {
      if (fail) throw new Error('db down');
      return xs;
    }, { maxBatch: 10, maxInFlight: 2 });
    await expect(Promise.all([b.submit(1), b.submit(2)])).rejects.toThrow('db down');
    fail = false;
    await expect(b.submit(3)).resolves.toBe(3);
  });

  // Also the API's group commit of single-job POSTs (it replaced a GroupCommit class of its own).
  it('hands 1000 concurrent submissions over in groups of at most maxBatch, answering each in order', async () => {
    const groups: number[][] = [];
    const b = new MicroBatcher(async (xs: number[]) => {
      groups.push(xs);
      return xs.map((x) => `r${x}`);
    }, { maxBatch: 500, maxInFlight: 2 });
    const answers = await Promise.all(Array.from({ length: 1000 }, (_, i) => b.submit(i)));
    expect(answers).toEqual(Array.from({ length: 1000 }, (_, i) => `r${i}`));
    expect(groups.map((g) => g.length)).toEqual([500, 500]);
  });

  it('sends a lone item at once, and makes items that arrive while every slot is busy wait and go together', async () => {
    const groups: number[][] = [];
    const release: (() => void)[] = [];
    const b = new MicroBatcher(
      (xs: number[]) => {
        groups.push(xs);
        return new Promise<number[]>((resolve) => release.push(() => resolve(xs)));
      },
      { maxBatch: 100, maxInFlight: 2 },
    );
    const turn = () => new Promise((r) => setImmediate(r));
    const first = b.submit(1);
    await turn();
    expect(groups).toEqual([[1]]); // no window to wait out
    const second = b.submit(2);
    await turn();
    expect(groups).toEqual([[1], [2]]); // second slot
    const waiting = [3, 4, 5].map((i) => b.submit(i));
    await turn();
    expect(groups).toHaveLength(2); // both slots busy: 3, 4, 5 wait
    release[0]();
    expect(await first).toBe(1);
    await turn();
    expect(groups).toEqual([[1], [2], [3, 4, 5]]);
    release[1]();
    release[2]();
    expect(await Promise.all([second, ...waiting])).toEqual([2, 3, 4, 5]);
  });

  it("with keyOf, keys take turns batch by batch: another key's item waits for the batch running, not for the backlog", async () => {
    const calls: string[][] = [];
    const slow = new Map<string, () => void>();
    const b = new MicroBatcher(
      (xs: string[]) => {
        calls.push(xs);
        // Tenant a's calls hold until released; b's answer at once.
        return xs[0].startsWith('a') ? new Promise<string[]>((resolve) => slow.set(xs[0], () => resolve(xs))) : Promise.resolve(xs);
      },
      { maxBatch: 2, maxInFlight: 1, keyOf: (x: string) => x[0] },
    );
    const backlog = ['a1', 'a2', 'a3', 'a4', 'a5', 'a6'].map((x) => b.submit(x));
    const quiet = b.submit('b1');
    await new Promise((r) => setImmediate(r));
    expect(calls).toEqual([['a1', 'a2']]); // one call at a time: one connection
    slow.get('a1')!();
    // First come first served, b1 would wait for two more batches of a's; it goes next.
    expect(await quiet).toBe('b1');
    expect(calls).toEqual([['a1', 'a2'], ['b1'], ['a3', 'a4']]);
    slow.get('a3')!();
    await new Promise((r) => setImmediate(r));
    slow.get('a5')!();
    expect(await Promise.all(backlog)).toEqual(['a1', 'a2', 'a3', 'a4', 'a5', 'a6']);
  });

  it("with shareBatches, waiting keys share a batch; a key's backlog adds no more than the largest other key brings", async () => {
    const { b, calls, release } = gatedSharing();
    const first = b.submit('z0'); // holds the one slot until released
    await new Promise((r) => setImmediate(r));
    const waiting = ['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'b1', 'c1', 'c2', 'd1', 'd2', 'd3'].map((x) => b.submit(x));
    release();
    await first;
    expect(await Promise.all(waiting)).toEqual(['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'b1', 'c1', 'c2', 'd1', 'd2', 'd3']);
    // a adds 3 (d's, the largest other), b and c all theirs; d waits its turn at the front.
    // Then d and a's rest (3 each: d alone would bring 3); then a's last, alone, as a batch.
    expect(calls).toEqual([['z0'], ['a1', 'a2', 'a3', 'b1', 'c1', 'c2'], ['d1', 'd2', 'd3', 'a4', 'a5', 'a6'], ['a7']]);
  });

  it('with shareBatches and maxShare, a key adds at most maxShare to a shared batch; alone, it fills the batch', async () => {
    const { b, calls, release } = gatedSharing({ maxShare: 2 });
    const first = b.submit('z0');
    await new Promise((r) => setImmediate(r));
    const waiting = ['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8', 'a9', 'b1', 'b2', 'b3', 'b4'].map((x) => b.submit(x));
    release();
    await Promise.all([first, ...waiting]);
    // Without maxShare a and b would bring 4 each (b's 4 the largest other); with it, 2 each
    // while both wait; then a, alone, fills the batch.
    expect(calls).toEqual([['z0'], ['a1', 'a2', 'b1', 'b2'], ['a3', 'a4', 'b3', 'b4'], ['a5', 'a6', 'a7', 'a8', 'a9']]);
  });

  it("with shareBatches, an item `alone` marks goes in its key's own batch: the key's items before it share, the others' batch goes without it", async () => {
    const { b, calls, release } = gatedSharing({ alone: (x: string) => x.endsWith('!') });
    const first = b.submit('z0');
    await new Promise((r) => setImmediate(r));
    const waiting = ['a1', 'a2!', 'a3', 'b1', 'c1!', 'c2', 'd1'].map((x) => b.submit(x));
    release();
    await Promise.all([first, ...waiting]);
    // a1 shares; a2! then goes with a's rest in a's own batch, c1! with c's when c is first in turn.
    expect(calls).toEqual([['z0'], ['a1', 'b1', 'd1'], ['c1!', 'c2'], ['a2!', 'a3']]);
  });

  it("puts a shared batch's items answered RUN_ALONE back at the head of their keys' queues, each key's next batch its own", async () => {
    const calls: string[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let inFlight = 0;
    let most = 0;
    const b = new MicroBatcher(
      async (xs: string[]): Promise<(string | typeof RUN_ALONE)[]> => {
        calls.push(xs);
        most = Math.max(most, ++inFlight);
        if (calls.length === 1) await gate;
        await new Promise((r) => setImmediate(r));
        inFlight--;
        // A shared batch holding b's item fails on it: every item goes again, alone.
        return xs.some((x) => x.startsWith('b')) && new Set(xs.map((x) => x[0])).size > 1 ? xs.map(() => RUN_ALONE) : xs;
      },
      { maxBatch: 6, maxInFlight: 1, keyOf: (x: string) => x[0], shareBatches: true },
    );
    const first = b.submit('z0');
    await new Promise((r) => setImmediate(r));
    const waiting = ['a1', 'b1', 'c1'].map((x) => b.submit(x));
    release();
    await first;
    const later = ['a2', 'd1'].map((x) => b.submit(x));
    expect(await Promise.all([...waiting, ...later])).toEqual(['a1', 'b1', 'c1', 'a2', 'd1']);
    // a's own batch takes a2, arrived meanwhile, too; d, last in turn, waits for the three.
    expect(calls).toEqual([['z0'], ['a1', 'b1', 'c1'], ['a1', 'a2'], ['b1'], ['c1'], ['d1']]);
    expect(most).toBe(1);
  });

  it("withdraws an item answered RUN_ALONE whose signal aborted in its batch, or aborts while it waits again: it never runs again", async () => {
    const calls: string[][] = [];
    const holds: (() => void)[] = [];
    const b = new MicroBatcher(
      async (xs: string[]): Promise<(string | typeof RUN_ALONE)[]> => {
        calls.push(xs);
        await new Promise<void>((r) => holds.push(r));
        return new Set(xs.map((x) => x[0])).size > 1 ? xs.map(() => RUN_ALONE) : xs;
      },
      { maxBatch: 6, maxInFlight: 1, keyOf: (x: string) => x[0], shareBatches: true },
    );
    const [inBatch, waitingAgain] = [new AbortController(), new AbortController()];
    const answers = [b.submit('a1'), b.submit('b1', inBatch.signal), b.submit('c1', waitingAgain.signal)].map((p) => p.catch((e: Error) => e.message));
    await new Promise((r) => setImmediate(r));
    inBatch.abort(new Error('b1 past its deadline'));
    holds[0]();
    await new Promise((r) => setImmediate(r));
    expect(calls).toEqual([['a1', 'b1', 'c1'], ['a1']]); // b1 withdrawn at once; c1 waits behind a1
    waitingAgain.abort(new Error('c1 past its deadline'));
    holds[1]();
    expect(await Promise.all(answers)).toEqual(['a1', 'b1 past its deadline', 'c1 past its deadline']);
    await b.drain();
    expect(calls).toEqual([['a1', 'b1', 'c1'], ['a1']]);
  });

  it("with shareBatches, a key's items wait while a batch of its own runs: a key whose batch waits on its own rows never holds every slot, nor joins others' batches", async () => {
    const batches: string[][] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const b = new MicroBatcher(
      async (xs: string[]): Promise<(string | typeof RUN_ALONE)[]> => {
        batches.push(xs);
        if (xs.every((x) => x.startsWith('a'))) await held; // a's own batch waits on a key a holds
        return new Set(xs.map((x) => x[0])).size > 1 ? xs.map(() => RUN_ALONE) : xs; // shared: fails on a's rows
      },
      { maxBatch: 6, maxInFlight: 2, keyOf: (x: string) => x[0], shareBatches: true },
    );
    const a1 = b.submit('a1');
    await new Promise((r) => setImmediate(r)); // a1 runs alone, in one slot, held
    const a2 = b.submit('a2'); // a's retry, alone in the queue: not a second batch of a's own
    await new Promise((r) => setImmediate(r));
    const b1 = b.submit('b1');
    await expect(b1).resolves.toBe('b1'); // without the rule: a2 took the second slot (alone, or sent back alone first in turn)
    expect(batches).toEqual([['a1'], ['b1']]);
    release();
    await expect(Promise.all([a1, a2])).resolves.toEqual(['a1', 'a2']);
    expect(batches[2]).toEqual(['a2']);
    await b.drain();
  });

  it("with shareBatches, two keys' items a call of their key alone gave up on run in slots of their own: the other keys' shared batch still goes", async () => {
    const batches: string[][] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const b = new MicroBatcher(
      async (xs: string[], lane: string): Promise<(string | typeof RUN_ALONE)[]> => {
        batches.push(xs);
        const keys = new Set(xs.map((x) => x[0]));
        if (!keys.has('a') && !keys.has('b')) return xs;
        if (lane !== 'alone') return xs.map(() => RUN_ALONE); // in the shared slots: gives up on a's or b's held rows at once
        await held; // in a slot for batches that go alone: waits on its own rows
        return xs;
      },
      { maxBatch: 6, maxInFlight: 2, keyOf: (x: string) => x[0], shareBatches: true },
    );
    const mine = ['a1', 'b1'].map((x) => b.submit(x));
    // Shared, given up on; each as its own, given up on again; then each in a slot for batches that go alone.
    for (let i = 0; i < 20 && batches.length < 5; i++) await new Promise((r) => setImmediate(r));
    // In the same two slots a1 and b1 held both, and c1 waited as long as a and b held their rows.
    await expect(b.submit('c1')).resolves.toBe('c1');
    expect(batches).toEqual([['a1', 'b1'], ['a1'], ['a1'], ['b1'], ['b1'], ['c1']]);
    release();
    await expect(Promise.all(mine)).resolves.toEqual(['a1', 'b1']);
    expect(batches).toHaveLength(6);
    await b.drain();
  });

  it("with shareBatches, keys sent back from a shared batch take all but one shared slot: a fresh key's batch goes in the other", async () => {
    const calls: [string, string][] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const b = new MicroBatcher(
      async (xs: string[], lane: string): Promise<(string | typeof RUN_ALONE)[]> => {
        calls.push([xs.join(), lane]);
        if (xs.some((x) => x.startsWith('x'))) return xs; // a fresh key's: nothing held
        if (lane === 'shared') return xs.map(() => RUN_ALONE); // a, b and c's: met a held key
        if (lane === 'own') await held; // each finding out whether it was its own (150 ms in IngestCommit)
        return xs;
      },
      { maxBatch: 6, maxInFlight: 2, keyOf: (x: string) => x[0], shareBatches: true },
    );
    const sent = ['a1', 'b1', 'c1'].map((x) => b.submit(x));
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    // Before: b's went in the second slot beside a's, and x waited for both.
    await expect(b.submit('x1')).resolves.toBe('x1');
    expect(calls).toEqual([['a1,b1,c1', 'shared'], ['a1', 'own'], ['x1', 'shared']]);
    release();
    await expect(Promise.all(sent)).resolves.toEqual(['a1', 'b1', 'c1']);
  });

  it('with shareBatches, a key with a batch of its own running waits for it, alone or beside other keys, and its next batch takes all that waits', async () => {
    const batches: string[][] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const b = new MicroBatcher(
      async (xs: string[]) => {
        batches.push(xs);
        if (xs[0] === 'a1') await held; // a's own batch, waiting on a's own rows
        return xs;
      },
      { maxBatch: 10, maxInFlight: 2, keyOf: (x: string) => x[0], shareBatches: true, maxShare: 50 },
    );
    const a1 = b.submit('a1');
    await new Promise((r) => setImmediate(r));
    const later = ['a2', 'a3'].map((x) => b.submit(x));
    await new Promise((r) => setImmediate(r));
    await expect(b.submit('b1')).resolves.toBe('b1'); // the free slot, without a's items (each shared insert would wait on a's rows)
    expect(batches).toEqual([['a1'], ['b1']]);
    release();
    await expect(Promise.all([a1, ...later])).resolves.toEqual(['a1', 'a2', 'a3']);
    expect(batches).toEqual([['a1'], ['b1'], ['a2', 'a3']]);
  });

  it('sends a batch of one key answered RUN_ALONE again as its own batch that goes alone, and rejects that one answered RUN_ALONE (it would go again forever)', async () => {
    const lanes: string[] = [];
    const b = new MicroBatcher(async (xs: string[], lane: string) => (lanes.push(lane), xs.map(() => RUN_ALONE)), { maxBatch: 6, maxInFlight: 1, keyOf: (x: string) => x[0], shareBatches: true });
    await expect(b.submit('a1')).rejects.toThrow('RUN_ALONE for a batch that goes alone');
    expect(lanes).toEqual(['shared', 'alone']);
    // From a batch of two keys: each goes again in the shared slots as its own ('own', where a run may wait less), then alone.
    const seen: [string, string][] = [];
    const two = new MicroBatcher(async (xs: string[], lane: string): Promise<(string | typeof RUN_ALONE)[]> => (seen.push([xs.join(), lane]), lane === 'alone' ? xs : xs.map(() => RUN_ALONE)), { maxBatch: 6, maxInFlight: 1, keyOf: (x: string) => x[0], shareBatches: true });
    await expect(Promise.all([two.submit('a1'), two.submit('b1')])).resolves.toEqual(['a1', 'b1']);
    expect(seen).toEqual([['a1,b1', 'shared'], ['a1', 'own'], ['a1', 'alone'], ['b1', 'own'], ['b1', 'alone']]);
  });

  it('answers every caller with the error when the batch function throws synchronously', async () => {
    const b = new MicroBatcher(
      (): Promise<number[]> => {
        throw new Error('sync boom');
      },
      { maxBatch: 2, maxInFlight: 2 },
    );
    const settled = await Promise.allSettled([b.submit(1), b.submit(2), b.submit(3)]);
    expect(settled.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
  });

  it('drain() waits for what is queued and in flight', async () => {
    const b = new MicroBatcher(async (xs: number[]) => xs, { maxBatch: 10, maxInFlight: 1 });
    const p = b.submit(7);
    await b.drain();
    expect(b.pending).toBe(0);
    expect(await p).toBe(7);
  });

  it('with lingerMs, a short batch waits for more before it goes; a full one does not', async () => {
    const groups: number[][] = [];
    const b = new MicroBatcher(async (xs: number[]) => (groups.push(xs), xs), { maxBatch: 3, maxInFlight: 1, lingerMs: 30 });
    const first = b.submit(1);
    await new Promise((r) => setTimeout(r, 10));
    expect(groups).toEqual([]); // still lingering
    const second = b.submit(2);
    expect(await Promise.all([first, second])).toEqual([1, 2]);
    expect(groups).toEqual([[1, 2]]);
    const full = [b.submit(3), b.submit(4), b.submit(5)];
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(groups).toEqual([[1, 2], [3, 4, 5]]);
    await Promise.all(full);
  });
});
