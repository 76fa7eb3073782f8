import { GroupCommit } from './group-commit';

describe('GroupCommit', () => {
  it('hands 1000 concurrent submissions to flush in groups of at most maxItems, answering each in order', async () => {
    const groups: number[][] = [];
    const gc = new GroupCommit<number, string>(
      async (items) => {
        groups.push(items);
        return items.map((i) => `r${i}`);
      },
      { maxInFlight: 2, maxItems: 500 },
    );
    const answers = await Promise.all(Array.from({ length: 1000 }, (_, i) => gc.submit(i)));
    expect(answers).toEqual(Array.from({ length: 1000 }, (_, i) => `r${i}`));
    // maxItems reached twice: no timer needed, two flushes for a thousand callers.
    expect(groups.map((g) => g.length)).toEqual([500, 500]);
  });

  it('flushes a partial group when drained, and rejects every caller of a failed group', async () => {
    const gc = new GroupCommit<number, number>(
      async (items) => {
        if (items.includes(13)) throw new Error('boom');
        return items;
      },
      { maxInFlight: 2, maxItems: 100 },
    );
    const ok = gc.submit(1);
    const bad = [gc.submit(13), gc.submit(14)];
    const settled = Promise.allSettled([ok, ...bad]);
    await gc.drain();
    const res = await settled;
    expect(res.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    const gc2 = new GroupCommit<number, number>(async (items) => items, { maxInFlight: 2, maxItems: 100 });
    const p = gc2.submit(7);
    await gc2.drain();
    expect(await p).toBe(7);
  });

  it('sends a lone item at once, and makes items that arrive while every slot is busy wait and go together', async () => {
    const groups: number[][] = [];
    const release: (() => void)[] = [];
    const gc = new GroupCommit<number, number>(
      (items) => {
        groups.push(items);
        return new Promise((resolve) => release.push(() => resolve(items)));
      },
      { maxInFlight: 2, maxItems: 100 },
    );
    const turn = () => new Promise((r) => setImmediate(r));
    const first = gc.submit(1);
    await turn();
    expect(groups).toEqual([[1]]); // no window to wait out
    const second = gc.submit(2);
    await turn();
    expect(groups).toEqual([[1], [2]]); // second slot
    const waiting = [3, 4, 5].map((i) => gc.submit(i));
    await turn();
    expect(groups).toHaveLength(2); // both slots busy: 3, 4, 5 wait
    release[0]();
    expect(await first).toBe(1);
    await turn();
    await turn();
    expect(groups).toEqual([[1], [2], [3, 4, 5]]);
    release[1]();
    release[2]();
    expect(await Promise.all([second, ...waiting])).toEqual([2, 3, 4, 5]);
  });

  it('answers every caller with the error when flush throws synchronously', async () => {
    const gc = new GroupCommit<number, number>(
      (): Promise<number[]> => {
        throw new Error('sync boom');
      },
      { maxInFlight: 2, maxItems: 2 },
    );
    // maxItems reached: flushed at once, in this turn.
    const full = await Promise.allSettled([gc.submit(1), gc.submit(2)]);
    // A lone item: flushed at the end of the turn.
    const lone = await Promise.allSettled([gc.submit(3)]);
    expect([...full, ...lone].map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
  });
});
