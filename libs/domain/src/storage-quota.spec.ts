import { DomainValidationError } from './errors';
import { AcceptedBytes, MAX_STORED_BYTES_QUOTA, MIN_STORED_BYTES_QUOTA, storageRefusal, validateStoredBytesQuota } from './storage-quota';

describe('stored-bytes quota', () => {
  it('refuses a request that would pass the quota, and anything once the tenant is over it', () => {
    expect(storageRefusal(900, 100, 1000)).toBeNull();
    expect(storageRefusal(900, 101, 1000)).toEqual({ storedBytes: 900, requestBytes: 101, quotaBytes: 1000 });
    expect(storageRefusal(1001, 0, 1000)).toEqual({ storedBytes: 1001, requestBytes: 0, quotaBytes: 1000 });
    expect(storageRefusal(1000, 0, 1000)).toBeNull();
  });

  it('counts accepted bytes per measurement, gives back refunds, and drops counts a newer pass superseded', () => {
    const t0 = new Date('2027-01-01T00:00:00Z');
    const t1 = new Date('2027-01-01T00:20:00Z');
    const at = (ms: number) => new Date(t1.getTime() + ms);
    const a = new AcceptedBytes(1000);
    expect(a.since(1, null, t0)).toBe(0);
    const counted = a.add(1, null, 300);
    a.add(2, t0, 50);
    a.add(1, null, 200);
    expect(a.since(1, null, t0)).toBe(500);
    a.refund(1, counted, 200);
    expect(a.since(1, null, t0)).toBe(300);
    // Tenant 1 measured at t1: its count starts again, and a late refund of the old one is ignored.
    expect(a.since(1, t1, at(0))).toBe(0);
    a.add(1, t1, 10);
    a.refund(1, counted, 300);
    expect(a.since(1, t1, at(0))).toBe(10);
    // A record still carrying t0 (another key's cache) sees the newer count: a lower bound.
    expect(a.since(1, t0, at(0))).toBe(10);
    // Tenant 2 never ingests again: its t0 count goes once no cached record can carry t0.
    expect(a.size).toBe(2);
    expect(a.since(3, t1, at(999))).toBe(0);
    expect(a.size).toBe(2);
    expect(a.since(3, t1, at(1000))).toBe(0);
    expect(a.size).toBe(1);
  });

  it("keeps a new tenant's count, made against no measurement, until its own record carries one", () => {
    const t0 = new Date('2027-01-01T00:00:00Z');
    const a = new AcceptedBytes(1000);
    a.add(7, null, 400); // made after the pass of t0 was published: its record has no measurement yet
    expect(a.since(8, t0, t0)).toBe(0); // another tenant's record carries t0
    const later = new Date(t0.getTime() + 5000); // past the hold: no record carries anything older than t0
    expect(a.since(8, t0, later)).toBe(0);
    expect(a.since(7, null, later)).toBe(400); // before: 0, and it could write its whole quota again
    expect(a.since(7, new Date(t0.getTime() + 6000), later)).toBe(0); // measured: the count is done with
    expect(a.size).toBe(0);
  });

  it('takes whole bytes from 1 MiB to 1 PiB, or null', () => {
    expect(validateStoredBytesQuota(null)).toBeNull();
    expect(validateStoredBytesQuota(MIN_STORED_BYTES_QUOTA)).toBe(MIN_STORED_BYTES_QUOTA);
    expect(validateStoredBytesQuota(MAX_STORED_BYTES_QUOTA)).toBe(MAX_STORED_BYTES_QUOTA);
    for (const bad of [MIN_STORED_BYTES_QUOTA - 1, MAX_STORED_BYTES_QUOTA + 1, 2 ** 21 + 0.5, '2097152']) {
      expect(() => validateStoredBytesQuota(bad)).toThrow(DomainValidationError);
    }
    expect(() => validateStoredBytesQuota(5)).toThrow(/maxStoredBytes must be a whole number of bytes/);
  });
});
