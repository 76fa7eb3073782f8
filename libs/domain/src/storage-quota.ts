import { DomainValidationError, describeValue } from './errors';

/**
 * What a tenant stores: its jobs' payloads, results and errors (attempts included), its
 * schedules' payloads and their stored versions, as Postgres stores them (pg_column_size:
 * compressed when Postgres compressed them). Measured by the promoter's stored-bytes sweep, a
 * chunked pass over every row, so the figure is as of the last finished pass.
 */
export const DEFAULT_STORED_BYTES_QUOTA = 10 * 1024 ** 3;
export const MIN_STORED_BYTES_QUOTA = 1024 ** 2;
/** 1 PiB: past this a quota is no quota, and the figure stays an exact JavaScript number. */
export const MAX_STORED_BYTES_QUOTA = 1024 ** 5;

export interface StorageRefusal {
  storedBytes: number;
  requestBytes: number;
  quotaBytes: number;
}

/**
 * Whether a request adding `requestBytes` is refused: the tenant's last measured bytes and the
 * request's own would pass its quota. A tenant already over its quota is refused anything new,
 * however small; what it has is kept and runs.
 */
export function storageRefusal(storedBytes: number, requestBytes: number, quotaBytes: number): StorageRefusal | null {
  return storedBytes + requestBytes > quotaBytes ? { storedBytes, requestBytes, quotaBytes } : null;
}

/** A tenant's own quota in bytes, or null for the installation default. */
export function validateStoredBytesQuota(raw: unknown, field = 'maxStoredBytes'): number | null {
  if (raw === null) return null;
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < MIN_STORED_BYTES_QUOTA || raw > MAX_STORED_BYTES_QUOTA) {
    throw new DomainValidationError(
      field,
      'range',
      `${field} must be a whole number of bytes from ${MIN_STORED_BYTES_QUOTA} (1 MiB) to ${MAX_STORED_BYTES_QUOTA} (1 PiB), or null, got ${describeValue(raw)}`,
    );
  }
  return raw;
}
