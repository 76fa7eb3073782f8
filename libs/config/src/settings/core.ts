import { EVERY_ROLE, type Setting } from '../setting';

const DAY = 24 * 3600_000;
const PORT = { min: 1, max: 65535 };
const PG_WAIT = { type: 'ms', min: 0, max: DAY, readers: EVERY_ROLE } as const;

/** Read by every role (the core config, the database and Redis connections, logs and traces). */
export const CORE_SETTINGS = {
  DATABASE_URL: {
    type: 'url',
    protocols: ['postgres:', 'postgresql:'],
    example: 'postgres://user@host:port/database',
    default: 'postgres://postgres@127.0.0.1:5432/almanac',
    readers: EVERY_ROLE,
    meaning: 'Postgres connection (`npm start` picks one when unset: [operations.md](operations.md#what-npm-start-and-npm-test-do))',
  },
  REDIS_URL: {
    type: 'url',
    protocols: ['redis:', 'rediss:'],
    default: 'redis://127.0.0.1:6379',
    readers: EVERY_ROLE,
    meaning: "Redis connection; give it `maxmemory-policy noeviction` and AOF in production",
  },
  ALMANAC_REDIS_CLUSTER_NODES: {
    type: 'list',
    default: [],
    pattern: /^[A-Za-z0-9_.-]+:\d{1,5}$/,
    describe: 'host:port',
    defaultText: 'unset',
    readers: EVERY_ROLE,
    meaning:
      "a Redis Cluster's seed nodes, `host:port,host:port,…` (a few suffice); set, it replaces `REDIS_URL`'s host (whose credentials and `rediss:` still apply). Keys are hash-tagged so a pool's or a tenant's keys share a slot and pools spread over the nodes ([architecture.md](architecture.md), *Redis Cluster*)",
  },
  ALMANAC_ADMIN_TOKEN: {
    type: 'string',
    defaultText: 'dev default (`npm start` generates one per session)',
    allowedText: '16+ characters when `NODE_ENV=production`',
    readers: EVERY_ROLE,
    meaning: 'bearer token for `/v1/admin/*`; required, 16+ characters, when `NODE_ENV=production`',
  },
  PORT: { type: 'int', default: 3000, ...PORT, readers: EVERY_ROLE, meaning: 'HTTP port of each app (API, health, metrics)' },
  ALMANAC_ADMIN_PORT: {
    type: 'int',
    ...PORT,
    readers: ['api'],
    meaning: 'serve `/v1/admin/*` on this port only (a 404 on `PORT`, as an unknown path); api and all-in-one, other roles ignore it. Must differ from `PORT`',
  },
  ALMANAC_METRICS_PORT: {
    type: 'int',
    ...PORT,
    readers: EVERY_ROLE,
    meaning: 'serve `/metrics` on this port only (a 404 on `PORT`); every role. Must differ from `PORT` and `ALMANAC_ADMIN_PORT`',
  },
  NODE_ENV: { type: 'string', readers: EVERY_ROLE, meaning: '`production` makes the admin token mandatory' },
  ALMANAC_LOG_LEVEL: {
    type: 'enum',
    values: ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'],
    default: 'info',
    readers: EVERY_ROLE,
    meaning: 'the least severe events logged',
  },
  ALMANAC_LOG_FORMAT: {
    type: 'enum',
    values: ['auto', 'json', 'pretty'],
    default: 'auto',
    readers: EVERY_ROLE,
    meaning:
      "`pretty`: one readable line per event (pino-pretty), what `auto` picks when stdout is a terminal; `json`: one JSON object per line, what `auto` picks elsewhere. Health probes, scrapes and the API docs page are not logged; Nest's module and route lines are at `debug`",
  },
  ALMANAC_TRACING_CONTEXT: {
    type: 'enum',
    values: ['explicit', 'async-local-storage'],
    default: 'explicit',
    readers: EVERY_ROLE,
    meaning:
      "how a span's context reaches the spans under it, once tracing is on ([below](#tracing-opentelemetry)): `explicit` passes it by hand (a handler's `ctx.traceContext`); `async-local-storage` also registers OpenTelemetry's context manager, for instrumentation inside handlers that looks for its parent itself, at a cost to every promise of the process",
  },
  // BullMQ builds keys as `<prefix>:<queue>:…`; keep the prefix to one plain segment.
  ALMANAC_QUEUE_PREFIX: {
    type: 'string',
    default: 'almanac',
    pattern: /^[A-Za-z0-9_.-]{1,64}$/,
    describe: '1-64 letters, digits, "_", "." or "-"',
    readers: EVERY_ROLE,
    meaning: 'BullMQ key prefix (one segment)',
  },
  ALMANAC_IMMEDIATE_HORIZON_MS: {
    type: 'ms',
    default: 15 * 60_000,
    min: 0,
    max: 7 * DAY,
    readers: EVERY_ROLE,
    meaning: "due sooner than this: the API answers `\"tier\":\"immediate\"` (its hint goes on the hot queue, as a hot job's does); at most the hot horizon",
  },
  ALMANAC_HOT_HORIZON_MS: {
    type: 'ms',
    default: DAY,
    min: 1000,
    max: 30 * DAY,
    readers: EVERY_ROLE,
    meaning: 'due sooner than this: the row gets a hint on the hot queue, due when the row is; later jobs stay rows until the promoter queues them',
  },
  ALMANAC_DB_POOL_SIZE: { type: 'int', default: 10, min: 1, max: 500, readers: EVERY_ROLE, meaning: "Postgres connections per process in its pool (readiness has one more of its own, a worker's heartbeat another); on the api, one tenant's requests (ingest apart) run at most half of what group commits (twice ALMANAC_INGEST_COMMITS_IN_FLIGHT) and ALMANAC_INGEST_BATCHES_IN_FLIGHT leave at once, at least one; the rest wait their turn" },
  ALMANAC_PG_STATEMENT_TIMEOUT_MS: { ...PG_WAIT, default: 30_000, meaning: 'server-side bound on one statement (0 = none; migrations run without it)' },
  ALMANAC_PG_LOCK_TIMEOUT_MS: { ...PG_WAIT, default: 5_000, meaning: 'server-side bound on one lock wait (0 = none; migrations have their own, `ALMANAC_MIGRATION_LOCK_TIMEOUT_MS`)' },
  ALMANAC_PG_IDLE_IN_TRANSACTION_TIMEOUT_MS: {
    ...PG_WAIT,
    default: 600_000,
    meaning: 'server-side bound on a transaction left idle (0 = none; migrations run without it). A handler that opens `ctx.tx()` must not leave it idle longer',
  },
  ALMANAC_PG_ACQUIRE_TIMEOUT_MS: { ...PG_WAIT, default: 5_000, meaning: 'the longest a query waits for a pooled connection before it fails (0 = no bound)' },
  // Read where migrations run: the Job (`npm run migrate`) and the all-in-one boot (`npm start`).
  ALMANAC_MIGRATION_LOCK_TIMEOUT_MS: {
    ...PG_WAIT,
    default: 10_000,
    readers: [...EVERY_ROLE, 'tool'],
    meaning:
      'server-side bound on one lock wait of a migration statement (`npm run migrate`, the Job, `npm start`), so an `ALTER TABLE` stuck behind an open transaction does not queue every statement on that table behind it; past it the migration is rolled back and fails, and the Job retries it (0 = none)',
  },
  ALMANAC_REDIS_COMMAND_TIMEOUT_MS: {
    type: 'ms',
    default: 5000,
    min: 100,
    max: 600_000,
    readers: EVERY_ROLE,
    meaning: 'a command on the process-wide Redis connection (queue producers, sweeps, health) fails if unanswered this long',
  },
  ALMANAC_MAX_BODY_BYTES: {
    type: 'bytes',
    default: 4 * 1024 * 1024,
    min: 1024,
    max: 256 * 1024 * 1024,
    readers: EVERY_ROLE,
    meaning: 'largest HTTP request body (413 above it)',
  },
  // 4 MiB at 1 Mbit/s is ~34 s: slower than that is a client holding a connection open.
  ALMANAC_TRUST_PROXY: {
    type: 'list',
    default: [],
    pattern: /^(loopback|linklocal|uniquelocal|[0-9A-Fa-f.:]+(\/\d{1,3})?)$/,
    describe: 'addresses or CIDR ranges (or loopback, linklocal, uniquelocal)',
    defaultText: 'empty (no proxy trusted)',
    readers: EVERY_ROLE,
    meaning:
      'the proxies (an ingress controller\'s pod range) whose `X-Forwarded-For` names the client: the per-address limits (wrong admin tokens, key lookups, console sign-ins) then count clients, not the proxy, and the console\'s origin check reads their `X-Forwarded-Host`. Unset behind a proxy, every client shares the proxy\'s budget',
  },
  ALMANAC_HTTP_REQUEST_TIMEOUT_MS: {
    type: 'ms',
    default: 30_000,
    min: 1000,
    max: 600_000,
    readers: EVERY_ROLE,
    meaning: 'a request whose headers and body are not fully received by then gets `408` and its connection closed (slow senders); Node checks every 30 s',
  },
} as const satisfies Record<string, Setting>;
