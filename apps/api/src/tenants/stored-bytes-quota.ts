import { AcceptedBytes, storageRefusal } from '@almanac/domain';
import type { TenantRecord } from '@almanac/persistence';
import { Clock } from '@almanac/platform';
import { Inject, Injectable } from '@nestjs/common';
import { API_SETTINGS, type ApiSettings } from '../api-settings';
import { STALE_GRACE_MS } from '../auth/tenant-auth.service';
import { ApiError } from '../http/api-error';

/** The quota that applies to a tenant: its own, or the installation's (ALMANAC_STORED_BYTES_QUOTA). */
export function storedBytesQuota(tenant: TenantRecord, installationQuota: number): number {
  return tenant.storage.maxStoredBytes ?? installationQuota;
}

/** Bytes a request was charged, by key, until it is known which of them it wrote. */
export class StoredBytesCharge {
  constructor(private readonly refund: (bytes: number) => void, private readonly byKey: Map<string, number>) {}

  /** Gives back what `write` did not create (a replay, a conflict), all of it if it throws. */
  async settle<T>(write: Promise<T>, created: (result: T) => readonly string[]): Promise<T> {
    try {
      const result = await write;
      this.keepOnly(created(result));
      return result;
    } catch (error) {
      this.keepOnly([]);
      throw error;
    }
  }

  private keepOnly(keys: readonly string[]): void {
    const kept = new Set(keys);
    let back = 0;
    for (const [key, bytes] of this.byKey) if (!kept.has(key)) back += bytes;
    this.byKey.clear();
    if (back > 0) this.refund(back);
  }
}

/**
 * Refuses a request that would take the tenant past its stored-bytes quota: 413 with what it
 * stores, what the request adds and the quota, before anything is written. What it stores is the
 * last measured figure (the promoter's stored-bytes sweep) plus what this replica has charged
 * since: counted in the process, so ingest does no extra I/O for it, and each replica lets a
 * tenant have at most the room left at the last measurement. What the tenant has keeps running,
 * and its results are written whatever the quota.
 */
@Injectable()
export class StoredBytesQuota {
  // A count superseded by a newer pass is kept while a cached tenant record may still carry the
  // older figure (the auth cache's TTL, and its grace while lookups fail).
  private readonly accepted: AcceptedBytes;

  constructor(@Inject(API_SETTINGS) private readonly settings: ApiSettings, private readonly clock: Clock) {
    this.accepted = new AcceptedBytes(settings.authCacheTtlMs + STALE_GRACE_MS);
  }

  /** Refuses `bytes` (413) or charges them; checked and charged in one turn, so concurrent requests cannot both take the room. */
  charge(tenant: TenantRecord, bytes: number, key = ''): StoredBytesCharge {
    return this.chargeKeys(tenant, new Map([[key, bytes]]));
  }

  /**
   * charge for jobs or schedules with keys, counting only keys the tenant has not used: a resend
   * of an accepted one (after a 503, say) adds nothing and is answered as the replay it is, and a
   * request whose every key is used is never refused, not even when the tenant is already over
   * its quota. `known` is asked only when the whole request would be refused.
   */
  async chargeNewKeys(
    tenant: TenantRecord, items: readonly { key: string; payloadBytes: number }[], known: (keys: string[]) => Promise<readonly string[]>,
  ): Promise<StoredBytesCharge> {
    // A key repeated in one request is stored once (its first occurrence wins), so it is charged once.
    const once = new Map<string, number>();
    for (const x of items) if (!once.has(x.key)) once.set(x.key, x.payloadBytes);
    if (!this.refusal(tenant, sum(once))) return this.chargeKeys(tenant, once);
    const used = new Set(await known([...once.keys()]));
    const fresh = new Map([...once].filter(([key]) => !used.has(key)));
    // Nothing new (a resend, a replay of a retired key): answered whatever the tenant stores, even
    // over its quota, where any new job, however small, is refused.
    return this.chargeKeys(tenant, fresh);
  }

  private chargeKeys(tenant: TenantRecord, byKey: Map<string, number>): StoredBytesCharge {
    const bytes = sum(byKey);
    const refused = byKey.size > 0 ? this.refusal(tenant, bytes) : null;
    if (refused) {
      const message =
        `this tenant stores ${refused.storedBytes} bytes and this request adds ${refused.requestBytes}; its quota is ${refused.quotaBytes} bytes: ` +
        'let retention remove finished jobs, delete schedules, or ask the operator to raise maxStoredBytes';
      throw new ApiError(413, message, [{ field: 'tenant', rule: 'stored_bytes_quota', message }]);
    }
    const countedAt = this.accepted.add(tenant.id, tenant.storage.measuredAt, bytes);
    return new StoredBytesCharge((back) => this.accepted.refund(tenant.id, countedAt, back), byKey);
  }

  private refusal(tenant: TenantRecord, requestBytes: number) {
    const stored = tenant.storage.storedBytes + this.accepted.since(tenant.id, tenant.storage.measuredAt, this.clock.now());
    return storageRefusal(stored, requestBytes, storedBytesQuota(tenant, this.settings.storedBytesQuota));
  }
}

const sum = (byKey: Map<string, number>): number => [...byKey.values()].reduce((a, b) => a + b, 0);
