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

/**
 * What one API replica has accepted per tenant since the measurement its check compares with, so
 * the check adds it to the measured figure (a pass can take many minutes). Counts are keyed by the
 * measurement's time: a newer one starts the count again (rows made while a pass runs may be
 * missed by both, see measure-stored-bytes). One entry per tenant that was charged since its last
 * measurement; times are arguments, so this stays pure.
 */
export class AcceptedBytes {
  private readonly byTenant = new Map<number, { measuredAtMs: number; bytes: number }>();
  /** Measurements seen, with when first seen, oldest first, until older counts can be dropped. */
  private readonly passes: { measuredAtMs: number; seenAtMs: number }[] = [];
  private newestMs = -Infinity;

  /** `holdMs`: how long a tenant record may still carry a measurement after a newer one is seen (its cache). */
  constructor(private readonly holdMs: number) {}

  /** Accepted since `measuredAt` (null: none yet). A record older than the count gets it all anyway: a lower bound. */
  since(tenantId: number, measuredAt: Date | null, now: Date): number {
    const at = measuredAt?.getTime() ?? -Infinity;
    this.observe(at, now.getTime());
    const entry = this.byTenant.get(tenantId);
    if (!entry) return 0;
    if (entry.measuredAtMs >= at) return entry.bytes;
    this.byTenant.delete(tenantId); // the tenant's own measurement is newer
    return 0;
  }

  /** Counts `bytes` accepted; returns the measurement they were counted against, for a refund. */
  add(tenantId: number, measuredAt: Date | null, bytes: number): number {
    const at = measuredAt?.getTime() ?? -Infinity;
    if (bytes === 0) return at; // nothing to refund, and no entry to keep
    const entry = this.byTenant.get(tenantId);
    if (entry && entry.measuredAtMs >= at) {
      entry.bytes += bytes;
      return entry.measuredAtMs;
    }
    this.byTenant.set(tenantId, { measuredAtMs: at, bytes });
    return at;
  }

  /** Takes back bytes that were not written; nothing once a newer measurement started the count again. */
  refund(tenantId: number, countedAtMs: number, bytes: number): void {
    const entry = this.byTenant.get(tenantId);
    if (!entry || entry.measuredAtMs !== countedAtMs) return;
    entry.bytes -= bytes;
    if (entry.bytes <= 0) this.byTenant.delete(tenantId);
  }

  /** Tenants with a count (bounded memory, for tests and gauges). */
  get size(): number {
    return this.byTenant.size;
  }

  /**
   * A pass publishes every tenant at one time, so a newer measurement seen for any tenant
   * supersedes every older count; each is dropped once no cached record can carry the older one.
   */
  private observe(at: number, nowMs: number): void {
    if (at > this.newestMs) {
      this.newestMs = at;
      this.passes.push({ measuredAtMs: at, seenAtMs: nowMs });
    }
    let cutoff = -Infinity;
    for (let p = this.passes[0]; p !== undefined && p.seenAtMs + this.holdMs <= nowMs; p = this.passes[0]) {
      cutoff = p.measuredAtMs;
      this.passes.shift();
    }
    if (cutoff === -Infinity) return;
    // A count against no measurement (a tenant made after the last pass) stays until the tenant's
    // own record carries one (since() drops it then): dropped here, a new tenant could write its
    // quota again before its first measurement.
    for (const [tenantId, entry] of this.byTenant) if (entry.measuredAtMs < cutoff && entry.measuredAtMs !== -Infinity) this.byTenant.delete(tenantId);
  }
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
