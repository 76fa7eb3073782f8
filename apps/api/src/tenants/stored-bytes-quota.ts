import { storageRefusal } from '@almanac/domain';
import type { TenantRecord } from '@almanac/persistence';
import { ApiError } from '../http/api-error';

/** The quota that applies to a tenant: its own, or the installation's (ALMANAC_STORED_BYTES_QUOTA). */
export function storedBytesQuota(tenant: TenantRecord, installationQuota: number): number {
  return tenant.storage.maxStoredBytes ?? installationQuota;
}

/**
 * Refuses a request that would take the tenant past its stored-bytes quota: 413 with what it
 * stores, what the request adds and the quota. Checked against the last measured figure
 * (the promoter's stored-bytes sweep), before anything is written: what the tenant has keeps
 * running, and its results are written whatever the quota.
 */
export function assertStoredBytesRoom(tenant: TenantRecord, requestBytes: number, installationQuota: number): void {
  const refused = storageRefusal(tenant.storage.storedBytes, requestBytes, storedBytesQuota(tenant, installationQuota));
  if (!refused) return;
  const message =
    `this tenant stores ${refused.storedBytes} bytes and this request adds ${refused.requestBytes}; its quota is ${refused.quotaBytes} bytes: ` +
    'let retention remove finished jobs, delete schedules, or ask the operator to raise maxStoredBytes';
  throw new ApiError(413, message, [{ field: 'tenant', rule: 'stored_bytes_quota', message }]);
}

/**
 * assertStoredBytesRoom for jobs or schedules with keys, counting only keys the tenant has not
 * used: a resend of an accepted one (after a 503, say) adds nothing and is answered as the replay
 * it is, and a request whose every key is used is never refused, not even when the tenant is
 * already over its quota. `known` is asked only when the whole request would be refused.
 */
export async function assertRoomForNewKeys(
  tenant: TenantRecord, items: readonly { key: string; payloadBytes: number }[], installationQuota: number, known: (keys: string[]) => Promise<readonly string[]>,
): Promise<void> {
  const bytes = (xs: readonly { payloadBytes: number }[]) => xs.reduce((sum, x) => sum + x.payloadBytes, 0);
  // A key repeated in one request is stored once (its first occurrence wins), so it is charged once.
  const seen = new Set<string>();
  const once = items.filter((x) => !seen.has(x.key) && seen.add(x.key));
  if (!storageRefusal(tenant.storage.storedBytes, bytes(once), storedBytesQuota(tenant, installationQuota))) return;
  const used = new Set(await known(once.map((x) => x.key)));
  const fresh = once.filter((x) => !used.has(x.key));
  // Nothing new (a resend, a replay of a retired key): answered whatever the tenant stores, even
  // over its quota, where any new job, however small, is refused.
  if (fresh.length === 0) return;
  assertStoredBytesRoom(tenant, bytes(fresh), installationQuota);
}
