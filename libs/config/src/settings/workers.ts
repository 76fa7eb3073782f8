import { DEFAULT_RETRY_POLICY, POOL_NAME_PATTERN } from '@almanac/domain';
import type { Setting } from '../setting';

const WORKER = ['worker'] as const;
const DAY = 24 * 3600_000;
/**
 * What nodemailer's createTransport connects with: `smtp:` or `smtps:` (`//` optional), maybe
 * `user:pass@`, a host and a port (1-65535). Anything else it takes without a word (it sends
 * `mail.example.com`, `direct:` and `smtp://` to localhost:587) or refuses at the first job:
 * checked at boot, or every `email` job fails.
 */
const SMTP_URL = /^smtps?:(\/\/)?([^\s/?#]*@)?(\[[\d:a-f.]+\]|[\w.\u00a0-\uffff-]+)(:(6553[0-5]|655[0-2]\d|65[0-4]\d\d|6[0-4]\d{3}|[1-5]\d{4}|[1-9]\d{0,3}))?([/?#]\S*)?$/i;

/** Read by the dispatcher and the workers (and ALMANAC_POOLS by the promoter's look at the pools). */
export const DISPATCH_AND_WORKER_SETTINGS = {
  ALMANAC_POOLS: {
    type: 'list',
    default: [],
    defaultText: 'empty',
    allowedText: '`kind=pool` pairs',
    readers: ['dispatcher', 'promoter', 'worker'],
    meaning: "`kind=pool,…`: which worker pool runs each kind (otherwise the handler's own pool, else `default`); each pool has its own ready lists in Redis",
  },
  ALMANAC_DISPATCH_CONCURRENCY: {
    type: 'int',
    default: 500,
    min: 1,
    max: 10_000,
    readers: ['dispatcher'],
    meaning: 'envelopes (hot-queue jobs) the dispatcher hands off at once',
  },
  // The backstop behind the heartbeat (a dead worker is rescued by its beat, within seconds): a
  // worker that beats but lost a run gets it back once its lease runs out. Long handlers keep
  // their lease by heartbeat; the minimum is more than one heartbeat.
  ALMANAC_LEASE_MS: {
    type: 'ms',
    default: 30_000,
    min: 2000,
    max: 3600_000,
    readers: WORKER,
    meaning: "lease a worker's claim starts with, renewed by its heartbeat while the handler runs; the backstop behind the heartbeat (a dead worker is rescued within ~6 s of its last beat)",
  },
  ALMANAC_WORKER_POOLS: {
    type: 'list',
    default: ['default'],
    pattern: POOL_NAME_PATTERN,
    describe: 'pool names (a-z, 0-9, _ -)',
    readers: WORKER,
    meaning: 'pools this worker process serves (comma-separated)',
  },
  // Handlers are mostly I/O-bound and rows are claimed and completed in batches: more in flight
  // means bigger batches. 20,000 due noop jobs, one worker: 9,673 jobs/s at 200 against 6,642
  // at 100 (bench/throughput.ts, same hour). Handlers that use ctx.tx() each hold a database
  // connection while they run.
  ALMANAC_WORKER_CONCURRENCY: { type: 'int', default: 200, min: 1, max: 10_000, readers: WORKER, meaning: 'handlers running at once per pool' },
  // Decimal: five handlers of a minute each run 0.083 jobs/s.
  ALMANAC_WORKER_DEFAULT_THROUGHPUT: {
    type: 'number',
    min: 0.001,
    max: 1_000_000,
    defaultText: 'the concurrency',
    readers: WORKER,
    meaning:
      'jobs/s one replica is assumed to run until autoscaling has measured its pool saturated ([docs/operations.md](operations.md#autoscaling-keda-or-the-cpu-hpa-fallback))',
  },
  ALMANAC_WORKER_MAX_REPLICAS: {
    type: 'int',
    default: 20,
    min: 1,
    max: 10_000,
    readers: WORKER,
    meaning: "the pool's `maxReplicaCount`, reported so an alert can say when a spike is more than the ceiling can run",
  },
  // At least a second: `25` meant as seconds released every running handler 25 ms after SIGTERM
  // (its attempt spent, its side effects run again by the next worker).
  ALMANAC_WORKER_SHUTDOWN_MS: {
    type: 'ms',
    default: 25_000,
    min: 1000,
    max: 3600_000,
    readers: WORKER,
    meaning: 'on SIGTERM, how long running handlers may finish before they are released back to the queue',
  },
  ALMANAC_WORKER_ID: {
    type: 'string',
    pattern: /^[\w.:-]{1,100}$/,
    defaultText: '`<hostname>-<pid>`',
    readers: WORKER,
    meaning: 'recorded on each attempt',
  },
  ALMANAC_RETRY_BASE_MS: {
    type: 'ms',
    default: DEFAULT_RETRY_POLICY.baseMs,
    min: 1,
    max: DAY,
    readers: WORKER,
    meaning: 'backoff ceiling of the first retry; each later one doubles it (equal jitter)',
  },
  ALMANAC_RETRY_MAX_MS: {
    type: 'ms',
    default: DEFAULT_RETRY_POLICY.maxMs,
    max: 30 * DAY,
    allowedText: '`ALMANAC_RETRY_BASE_MS` to 2592000000',
    readers: WORKER,
    meaning: 'the backoff ceiling no retry waits beyond',
  },
  ALMANAC_HTTP_ALLOW_HOSTS: {
    type: 'list',
    default: [],
    defaultText: 'empty (no requests at all)',
    allowedText: '`scheme://host[:port]` entries',
    readers: WORKER,
    meaning:
      "origins the `http` kind may call, `scheme://host[:port]` (`https://*.example.com` for subdomains, not the domain itself), intersected with each tenant's `httpAllowHosts`; redirects are not followed (a 3xx is the call's outcome)",
  },
  ALMANAC_HTTP_ALLOW_CIDRS: {
    type: 'list',
    default: [],
    defaultText: 'empty',
    allowedText: 'CIDRs (`10.20.0.0/16`, `fd00:1::/64`)',
    readers: WORKER,
    meaning:
      'address ranges the `http` kind may reach although they are loopback, private or link-local (e.g. `10.20.0.0/16`); every other such address is refused after DNS. A cloud metadata or credentials address (169.254.169.254, 100.100.100.200, fd00:ec2::254, 169.254.170.2, 169.254.170.23, fd00:ec2::23) only when listed itself, not inside a wider range',
  },
  ALMANAC_HTTP_MAX_RESPONSE_BYTES: {
    type: 'bytes',
    default: 1024 * 1024,
    min: 0,
    max: 64 * 1024 * 1024,
    readers: WORKER,
    meaning: 'the most of a response body an `http` call reads; past it the connection is closed',
  },
  ALMANAC_HTTP_TIMEOUT_MS: { type: 'ms', default: 30_000, min: 100, max: 3600_000, readers: WORKER, meaning: 'timeout of one `http` call' },
  ALMANAC_SMTP_URL: {
    type: 'string',
    pattern: SMTP_URL,
    describe: 'smtp:// or smtps:// and a host (smtp://user:pass@host:port)',
    secret: true,
    allowedText: '`smtp://…` or `smtps://…` with a host',
    defaultText: 'empty (no `email` kind)',
    readers: WORKER,
    meaning: "`smtp://user:pass@host:port`: set, the worker runs and registers the `email` kind, which sends only for tenants an operator allowed (`emailAllowed`, admin API)",
  },
  // Off, an smtp:// server must start TLS (STARTTLS) before AUTH and the message: opportunistic
  // STARTTLS lets an on-path attacker strip it from EHLO and read the password and every tenant's mail.
  ALMANAC_SMTP_ALLOW_PLAINTEXT: {
    type: 'bool',
    default: false,
    readers: WORKER,
    meaning:
      '`true` lets the `email` kind send over an `smtp://` server that does not start TLS (a relay on the same host or pod, a test server); `false`: STARTTLS is required before AUTH and the message, and a server without it fails the attempt, sending nothing. `smtps://` is TLS from the start either way',
  },
  ALMANAC_EMAIL_FROM: { type: 'string', default: 'almanac@localhost', readers: WORKER, meaning: 'the From address of `email` jobs' },
} as const satisfies Record<string, Setting>;
