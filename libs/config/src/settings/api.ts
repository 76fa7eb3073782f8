import { DEFAULT_STORED_BYTES_QUOTA, KIND_PATTERN, MAX_STORED_BYTES_QUOTA, MIN_STORED_BYTES_QUOTA } from '@almanac/domain';
import type { Setting } from '../setting';

const API = ['api'] as const;

/** Read by the API role only. */
export const API_ROLE_SETTINGS = {
  ALMANAC_KINDS: {
    type: 'list',
    default: [],
    pattern: KIND_PATTERN,
    describe: 'comma-separated kinds (lower-case letter, then letters, digits, "_", "." or "-")',
    defaultText: 'empty (every registered kind)',
    readers: API,
    meaning: 'narrows the kinds the API accepts to these; workers register their kinds at boot, and a 400 for any other kind lists the registered ones',
  },
  ALMANAC_MAX_PAYLOAD_BYTES: { type: 'bytes', default: 64 * 1024, min: 16, max: 16 * 1024 * 1024, readers: API, meaning: 'largest job payload (413 above it)' },
  ALMANAC_DEFAULT_MAX_ATTEMPTS: { type: 'int', default: 3, min: 1, max: 100, readers: API, meaning: '`maxAttempts` when a job does not say' },
  ALMANAC_RATE_LIMIT_PER_SECOND: {
    type: 'int',
    default: 2000,
    min: 0,
    max: 10_000_000,
    readers: API,
    meaning: "ingest rate per tenant over all API replicas (per replica while Redis is unavailable), jobs/s (0 = off): a job-creating request spends one per job it sends, valid or not, before it is validated (a batch of n items costs n); `429` with `Retry-After` above it; a tenant's own `rateLimitPerSecond` overrides it",
  },
  ALMANAC_AUTH_CACHE_TTL_MS: {
    type: 'ms',
    default: 10_000,
    min: 0,
    max: 3_600_000,
    readers: API,
    meaning: "how long an API key's lookup is cached (keys found and keys found gone in separate caches)",
  },
  ALMANAC_AUTH_LOOKUPS_PER_SECOND: {
    type: 'int',
    default: 200,
    min: 1,
    max: 1_000_000,
    readers: API,
    meaning: 'database lookups per second per source address and API replica for live keys not cached (a key that is not a live key\'s is refused without one); beyond it `503` with `Retry-After`',
  },
  ALMANAC_INGEST_COMMITS_IN_FLIGHT: {
    type: 'int',
    default: 2,
    min: 1,
    max: 64,
    readers: API,
    meaning: "group commit: single-job inserts running at once (each of every tenant's POSTs waiting, a tenant adding no more than the largest other brings nor 50); POSTs arriving meanwhile wait for the next one. As many again of a tenant's own (a POST over 8 KiB of payload, or POSTs whose shared insert met a held key of theirs)",
  },
  // With the group commits' connections (2 shared, 2 of tenants' own), at most 4 + 4 of the pool's 10: reads and key lookups keep the rest.
  ALMANAC_INGEST_BATCHES_IN_FLIGHT: {
    type: 'int',
    default: 4,
    min: 1,
    max: 64,
    readers: API,
    meaning: 'POST /v1/jobs/batch requests being committed at once per replica; beyond it a new one waits up to 250 ms for a slot, then gets `503` with `Retry-After` (`details[0].rule = "concurrent_batches"`), and so do those of a tenant beyond all but one of them, at least 1 (`"tenant_concurrent_batches"`)',
  },
  ALMANAC_INGEST_BATCH_MAX: { type: 'int', default: 500, min: 1, max: 1000, readers: API, meaning: 'group commit: most jobs in one shared insert' },
  ALMANAC_ENQUEUE_TIMEOUT_MS: {
    type: 'ms',
    default: 1000,
    min: 10,
    max: 60_000,
    readers: API,
    meaning: 'how long ingest waits for Redis before leaving the row to the promoter; after a failed enqueue, hints go that way without trying Redis for as long',
  },
  // A group commit of 500 rows takes ~5-15 ms: 5,000 waiting is a few hundred ms of work, the
  // most a healthy database would queue; beyond it the database is stalled or saturated.
  ALMANAC_INGEST_MAX_PENDING: {
    type: 'int',
    default: 5000,
    min: 1,
    max: 1_000_000,
    readers: API,
    meaning: "single-job POSTs waiting for a group commit; beyond it new ones get `503` with `Retry-After`, and so do a tenant's beyond half of it",
  },
  ALMANAC_MAX_SCHEDULES_PER_TENANT: {
    type: 'int',
    default: 10_000,
    min: 1,
    max: 100_000_000,
    readers: API,
    meaning: 'schedules a tenant may hold (`403`, `details[0].rule = "quota"`, beyond it); a tenant created with `maxSchedules` has its own',
  },
  ALMANAC_STORED_BYTES_QUOTA: {
    type: 'bytes',
    default: DEFAULT_STORED_BYTES_QUOTA,
    min: MIN_STORED_BYTES_QUOTA,
    max: MAX_STORED_BYTES_QUOTA,
    readers: API,
    meaning:
      "bytes a tenant may store (payloads, results and errors of its jobs and attempts, its schedules' payloads), as the promoter last measured them; a request that would pass it gets `413` (`details[0].rule = \"stored_bytes_quota\"`) with the figures, and what the tenant has keeps running; a tenant's own `maxStoredBytes` overrides it",
  },
  // Every method, not reads alone: a cancel, a reschedule or a schedule whose cron is checked costs
  // the API's event loop as a read does, and so does a request it refuses as invalid.
  ALMANAC_REQUEST_RATE_LIMIT_PER_SECOND: {
    type: 'int',
    default: 200,
    min: 0,
    max: 1_000_000,
    readers: API,
    meaning:
      "requests per second per tenant over all API replicas (per replica while Redis is unavailable; 0 = off), whatever their method (reads, cancels, reschedules, retries, schedules, bulk operations, the console's pages and forms) and whether or not they are valid, spent before the request is validated; `429` with `Retry-After` above it; creating jobs spends the ingest rate (`ALMANAC_RATE_LIMIT_PER_SECOND`) instead",
  },
  // Issue 12: every request is answered within 3 s, stalled dependencies included.
  ALMANAC_REQUEST_TIMEOUT_MS: {
    type: 'ms',
    default: 2500,
    min: 100,
    max: 600_000,
    readers: API,
    meaning: 'a `/v1` request not answered by then gets `503` with `Retry-After` (its work may still finish: resend with the same key)',
  },
  ALMANAC_BULK_MAX_OPEN: { type: 'int', default: 5, min: 1, max: 1000, readers: API, meaning: 'bulk operations a tenant may have pending or running at once; `429` beyond it' },
  // Almanac does not terminate TLS and sits behind a proxy that does, so the request cannot
  // tell whether the browser used https: the cookie holding the secret is Secure unless told,
  // whatever the Host header says (a proxy may send its own, a loopback name).
  ALMANAC_CONSOLE_SECURE_COOKIE: {
    type: 'bool',
    default: true,
    readers: API,
    meaning:
      "the console's session cookie is `Secure` (Almanac sits behind a proxy that ends TLS and cannot see it), whatever the request's Host (Chromium keeps it over http://localhost and http://127.0.0.1); `false` for plain http (`npm start` sets `false` unless it is set; `docker-compose.yml` sets `false` for the api it serves on http://127.0.0.1:3000)",
  },
} as const satisfies Record<string, Setting>;
