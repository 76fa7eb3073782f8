import type { LookupAddress } from 'node:dns';
import { LOOKUPS_IN_FLIGHT, LookupShares } from './lookup-shares';

const answer: LookupAddress[] = [{ address: '192.0.2.1', family: 4 }];
const never = () => new Promise<LookupAddress[]>(() => undefined);

describe('LookupShares', () => {
  afterEach(() => jest.useRealTimers());

  it("a tenant whose DNS never answers holds one turn; another tenant's lookups go on", async () => {
    const shares = new LookupShares(60_000);
    for (let i = 0; i < 3; i++) shares.resolve(1, never).catch(() => undefined);
    for (let i = 0; i < 5; i++) expect(await shares.resolve(2, async () => answer)).toEqual(answer);
  });

  it(`at most ${LOOKUPS_IN_FLIGHT} lookups run at once; a waiting one starts when one returns`, async () => {
    const shares = new LookupShares(60_000);
    let finish!: (v: LookupAddress[]) => void;
    const first = shares.resolve(1, () => new Promise((r) => (finish = r)));
    // Their deadline passes long after this test: caught, or it fails whichever suite runs then.
    for (let t = 2; t <= LOOKUPS_IN_FLIGHT; t++) shares.resolve(t, never).catch(() => undefined);
    let started = false;
    const waiting = shares.resolve(99, async () => ((started = true), answer));
    await Promise.resolve();
    expect(started).toBe(false);
    finish(answer);
    expect(await first).toEqual(answer);
    expect(await waiting).toEqual(answer);
    expect(started).toBe(true);
  });

  it('a lookup that does not answer fails with ETIMEOUT, and its turn stays taken until it returns', async () => {
    jest.useFakeTimers();
    const shares = new LookupShares(5000);
    let finish!: (v: LookupAddress[]) => void;
    const slow = shares.resolve(1, () => new Promise((r) => (finish = r)));
    const next = shares.resolve(1, async () => answer);
    jest.advanceTimersByTime(5000);
    await expect(slow).rejects.toMatchObject({ code: 'ETIMEOUT' });
    await expect(next).rejects.toMatchObject({ code: 'ETIMEOUT' }); // waited for the tenant's one turn
    const after = shares.resolve(1, async () => answer);
    finish(answer); // the stuck lookup returns at last: its turn is free
    await Promise.resolve();
    expect(await after).toEqual(answer);
  });
});
