import { MicroBatcher } from './micro-batcher';

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
    const batches: number[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const b = new MicroBatcher(async (xs: number[]) => {
      batches.push(xs);
      if (batches.length === 1) await gate;
      return xs;
    }, { maxBatch: 2, maxInFlight: 1 });
    const first = b.submit(0);
    await new Promise((r) => setImmediate(r));
    const rest = [1, 2, 3, 4, 5].map((x) => b.submit(x));
    release();
    await Promise.all([first, ...rest]);
    expect(batches).toEqual([[0], [1, 2], [3, 4], [5]]);
    await b.drain();
    expect(b.pending).toBe(0);
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
});
