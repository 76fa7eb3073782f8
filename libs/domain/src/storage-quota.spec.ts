import { DomainValidationError } from './errors';
import { MAX_STORED_BYTES_QUOTA, MIN_STORED_BYTES_QUOTA, storageRefusal, validateStoredBytesQuota } from './storage-quota';

describe('stored-bytes quota', () => {
  it('refuses a request that would pass the quota, and anything once the tenant is over it', () => {
    expect(storageRefusal(900, 100, 1000)).toBeNull();
    expect(storageRefusal(900, 101, 1000)).toEqual({ storedBytes: 900, requestBytes: 101, quotaBytes: 1000 });
    expect(storageRefusal(1001, 0, 1000)).toEqual({ storedBytes: 1001, requestBytes: 0, quotaBytes: 1000 });
    expect(storageRefusal(1000, 0, 1000)).toBeNull();
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
