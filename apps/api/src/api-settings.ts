import { type Env, type OpsModuleOptions, readSetting } from '@almanac/platform';

/** API-only settings, validated at module init (declared in libs/config/src/settings/api.ts). */
export interface ApiSettings {
  /** ALMANAC_KINDS: when set, ingest accepts only these of the registered kinds; unset, every registered kind. */
  kinds?: ReadonlySet<string>;
  maxPayloadBytes: number;
  defaultMaxAttempts: number;
  /** Jobs per second per tenant; 0 turns the limiter off. tenants.rate_limit_per_second overrides. */
  rateLimitPerSecond: number;
  authCacheTtlMs: number;
  /** Key lookups in the database per second for keys in neither cache (per API replica). */
  authLookupsPerSecond: number;
  /** Group commit: most single-job commits running at once; others wait and go together. */
  commitsInFlight: number;
  batchMaxItems: number;
  /** Batch requests being committed at once (each holds a connection while it inserts); beyond it 503 (load shedding). */
  batchesInFlight: number;
  /** Past this an enqueue counts as failed and the rows are left to the promoter. */
  enqueueTimeoutMs: number;
  /** Single-job POSTs waiting for a group commit beyond which new ones get 503 (load shedding). */
  maxPendingCommits: number;
  /** A /v1 request not answered within this gets 503 with Retry-After (its work may still finish). */
  requestTimeoutMs: number;
  /** Schedules a tenant may hold; tenants.max_schedules overrides. */
  maxSchedulesPerTenant: number;
  /** Bytes a tenant may store (payloads, results, schedules); tenants.max_stored_bytes overrides. */
  storedBytesQuota: number;
  /** Requests per second per tenant (every method; ingest has its own job budget), over all replicas; 0 turns the limit off. */
  requestRateLimitPerSecond: number;
  /** Bulk operations a tenant may have pending or running at once. */
  maxOpenBulkOperations: number;
  /**
   * A tenant's requests under way at once on a replica (RequestsInFlight): half the pooled
   * connections (ALMANAC_DB_POOL_SIZE) that group commits and batches leave, at least one.
   */
  tenantRequestsInFlight: number;
  /**
   * The console's session cookie is `Secure` (sent over TLS only), whatever the request's host:
   * ALMANAC_CONSOLE_SECURE_COOKIE alone decides (`false` for plain http).
   */
  consoleSecureCookie: boolean;
}

export const API_SETTINGS = Symbol('API_SETTINGS');

/**
 * What the api's `/health/ready` checks: Postgres only. Ready without Redis, so Kubernetes keeps
 * it in its Service and ingest keeps taking jobs while Redis is away (they wait as scheduled
 * rows for the promoter to hint).
 */
export const API_READY_NEEDS: NonNullable<OpsModuleOptions['readyNeeds']> = ['postgres'];

export function loadApiSettings(env: Env = process.env): ApiSettings {
  const kinds = readSetting(env, 'ALMANAC_KINDS');
  return {
    kinds: kinds.length > 0 ? new Set(kinds) : undefined,
    maxPayloadBytes: readSetting(env, 'ALMANAC_MAX_PAYLOAD_BYTES'),
    defaultMaxAttempts: readSetting(env, 'ALMANAC_DEFAULT_MAX_ATTEMPTS'),
    rateLimitPerSecond: readSetting(env, 'ALMANAC_RATE_LIMIT_PER_SECOND'),
    authCacheTtlMs: readSetting(env, 'ALMANAC_AUTH_CACHE_TTL_MS'),
    authLookupsPerSecond: readSetting(env, 'ALMANAC_AUTH_LOOKUPS_PER_SECOND'),
    commitsInFlight: readSetting(env, 'ALMANAC_INGEST_COMMITS_IN_FLIGHT'),
    batchMaxItems: readSetting(env, 'ALMANAC_INGEST_BATCH_MAX'),
    batchesInFlight: readSetting(env, 'ALMANAC_INGEST_BATCHES_IN_FLIGHT'),
    enqueueTimeoutMs: readSetting(env, 'ALMANAC_ENQUEUE_TIMEOUT_MS'),
    maxPendingCommits: readSetting(env, 'ALMANAC_INGEST_MAX_PENDING'),
    requestTimeoutMs: readSetting(env, 'ALMANAC_REQUEST_TIMEOUT_MS'),
    maxSchedulesPerTenant: readSetting(env, 'ALMANAC_MAX_SCHEDULES_PER_TENANT'),
    storedBytesQuota: readSetting(env, 'ALMANAC_STORED_BYTES_QUOTA'),
    requestRateLimitPerSecond: readSetting(env, 'ALMANAC_REQUEST_RATE_LIMIT_PER_SECOND'),
    maxOpenBulkOperations: readSetting(env, 'ALMANAC_BULK_MAX_OPEN'),
    // Group commit holds twice its commits at most: shared inserts, and as many of tenants' own (MicroBatcher).
    tenantRequestsInFlight: Math.max(1, Math.floor((readSetting(env, 'ALMANAC_DB_POOL_SIZE') - 2 * readSetting(env, 'ALMANAC_INGEST_COMMITS_IN_FLIGHT') - readSetting(env, 'ALMANAC_INGEST_BATCHES_IN_FLIGHT')) / 2)),
    consoleSecureCookie: readSetting(env, 'ALMANAC_CONSOLE_SECURE_COOKIE'),
  };
}
