import { createdAtFromJobId, JOB_ID_EPOCH_MS } from './job-id';

describe('job ids', () => {
  it('decodes the creation time the same way on the fast path and the BigInt path', () => {
    const ms = Date.parse('2026-11-29T10:00:00.123Z') - JOB_ID_EPOCH_MS;
    for (const seq of [0n, 1n, 4095n]) {
      const id = (BigInt(ms) << 12n) | seq;
      expect(createdAtFromJobId(id.toString())).toEqual(new Date('2026-11-29T10:00:00.123Z'));
      expect(createdAtFromJobId(id)).toEqual(new Date('2026-11-29T10:00:00.123Z'));
    }
    // Beyond 2^53 (year 2095+) only BigInt is exact.
    const big = (2n ** 53n + 12345n) << 0n;
    expect(createdAtFromJobId(big.toString())).toEqual(new Date(JOB_ID_EPOCH_MS + Number(big >> 12n)));
  });
});
