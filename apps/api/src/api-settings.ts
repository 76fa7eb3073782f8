import { DEFAULT_STORED_BYTES_QUOTA, KIND_PATTERN, MAX_STORED_BYTES_QUOTA, MIN_STORED_BYTES_QUOTA } from '@almanac/domain';
import { envBool, envInt, envList, type Env } from '@almanac/platform';

/** API-only settings (ALMANAC_* variables read here, validated at module init). */
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
  /** Read requests per second per tenant per replica; 0 turns the limit off. */
  readRateLimitPerSecond: number;
  /** Bulk operations a tenant may have pending or running at once. */
  maxOpenBulkOperations: number;
  /** The console's session cookie is `Secure` (sent over TLS only), except to a loopback host. */
  consoleSecureCookie: boolean;
}

export const API_SETTINGS = Symbol('API_SETTINGS');

export function loadApiSettings(env: Env = process.env): ApiSettings {
  return {
    kinds: optionalSet(
      envList(env, 'ALMANAC_KINDS', [], {
        pattern: KIND_PATTERN,
        describe: 'comma-separated kinds (lower-case letter, then letters, digits, "_", "." or "-")',
      }),
    ),
    maxPayloadBytes: envInt(env, 'ALMANAC_MAX_PAYLOAD_BYTES', 64 * 1024, { min: 16, max: 16 * 1024 * 1024 }),
    defaultMaxAttempts: envInt(env, 'ALMANAC_DEFAULT_MAX_ATTEMPTS', 3, { min: 1, max: 100 }),
    rateLimitPerSecond: envInt(env, 'ALMANAC_RATE_LIMIT_PER_SECOND', 2000, { min: 0, max: 10_000_000 }),
    authCacheTtlMs: envInt(env, 'ALMANAC_AUTH_CACHE_TTL_MS', 10_000, { min: 0, max: 3_600_000 }),
    authLookupsPerSecond: envInt(env, 'ALMANAC_AUTH_LOOKUPS_PER_SECOND', 200, { min: 1, max: 1_000_000 }),
    commitsInFlight: envInt(env, 'ALMANAC_INGEST_COMMITS_IN_FLIGHT', 2, { min: 1, max: 64 }),
    batchMaxItems: envInt(env, 'ALMANAC_INGEST_BATCH_MAX', 500, { min: 1, max: 1000 }),
    enqueueTimeoutMs: envInt(env, 'ALMANAC_ENQUEUE_TIMEOUT_MS', 1000, { min: 10, max: 60_000 }),
    // A group commit of 500 rows takes ~5-15 ms: 5,000 waiting is a few hundred ms of work, the
    // most a healthy database would queue; beyond it the database is stalled or saturated.
    maxPendingCommits: envInt(env, 'ALMANAC_INGEST_MAX_PENDING', 5000, { min: 1, max: 1_000_000 }),
    // Issue 12: every request is answered within 3 s, stalled dependencies included.
    requestTimeoutMs: envInt(env, 'ALMANAC_REQUEST_TIMEOUT_MS', 2500, { min: 100, max: 600_000 }),
    maxSchedulesPerTenant: envInt(env, 'ALMANAC_MAX_SCHEDULES_PER_TENANT', 10_000, { min: 1, max: 100_000_000 }),
    storedBytesQuota: envInt(env, 'ALMANAC_STORED_BYTES_QUOTA', DEFAULT_STORED_BYTES_QUOTA, { min: MIN_STORED_BYTES_QUOTA, max: MAX_STORED_BYTES_QUOTA }),
    readRateLimitPerSecond: envInt(env, 'ALMANAC_READ_RATE_LIMIT_PER_SECOND', 200, { min: 0, max: 1_000_000 }),
    maxOpenBulkOperations: envInt(env, 'ALMANAC_BULK_MAX_OPEN', 5, { min: 1, max: 1000 }),
    // Almanac does not terminate TLS and sits behind a proxy that does, so the request cannot
    // tell whether the browser used https: the cookie holding the secret is Secure unless told.
    consoleSecureCookie: envBool(env, 'ALMANAC_CONSOLE_SECURE_COOKIE', true),
  };
}

function optionalSet(items: string[]): ReadonlySet<string> | undefined {
  return items.length > 0 ? new Set(items) : undefined;
}
