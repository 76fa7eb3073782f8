/**
 * Chaos: steady load through every role while one fault after another hits them (issue 12).
 *
 *   npm run build
 *   node -r ./bench/lib/register.cjs bench/chaos.ts [--rate 50] [--scenario-seconds 25] [--stall-seconds 20]
 *        [--only sigkill-api,redis-stall] [--drain 240000]
 *
 * One private PostgreSQL cluster and one private redis-server (never the shared ones), the real
 * roles from dist/ (api, promoter, dispatcher, two workers) with their default settings. A load
 * generator POSTs `charge` jobs (one invoice each, due 2 s ahead) at --rate per second for the
 * whole run, recording every answer. Scenarios run in turn, each for --scenario-seconds, its
 * fault 3 s in: SIGKILL of each role (restarted after 1 s), a rolling restart of every role
 * (the new process up, then SIGTERM to the old one), worker-b cut off from Redis and from
 * Postgres (half-open connections), a Postgres restart, a Postgres stall (SIGSTOP of every server process
 * for --stall-seconds), a Redis restart without persistence and a Redis stall. Then the load
 * stops and the bench waits for every accepted job. Per scenario (jobs attributed by the moment
 * they were posted): requests, accepted, API errors (no answer or 5xx), answers slower than
 * 3 s, jobs lost (accepted, not succeeded), duplicate charges, attempts beyond the first, and
 * the worst lateness (the charge's time by Postgres's clock − run time), also less the time the fault itself
 * held a job back (a job due as a stall begins cannot run before it ends). JSON on stdout,
 * progress on stderr.
 *
 * worker-b reaches Redis and Postgres through fault proxies (bench/lib/fault-proxy.ts), which
 * the two cut-off scenarios blackhole for --cut-seconds: connections stay open, bytes vanish.
 * Clock skew: worker-a +5 s, the dispatcher −5 s and the promoter +5 s, one at a time for
 * --cut-seconds, through libfaketime (`apt-get install faketime`; skipped without it).
 *
 * Poison (issue 32): a second tenant's jobs that a shared statement cannot write, while the load
 * tenant's jobs share their batches: `poison-claim` (a row whose claim Postgres refuses, by a
 * trigger raising 22003), `poison-completion` (an outcome whose history row Postgres refuses
 * until written without its values, 22021) and `token-flood` (well-shaped random keys from the
 * load's own address as fast as the API answers them), `poison-recurring` (a schedule of the
 * second tenant whose occurrences Postgres refuses, beside a schedule of the load tenant, both
 * every minute: the scenario waits for the next recurring run), `poison-bulk` (a bulk cancel of
 * the second tenant's jobs whose change Postgres refuses, beside a bulk cancel of the load
 * tenant's), `poison-promotion` (cold rows of the second tenant coming due whose promotion
 * Postgres refuses, beside the load tenant's: written straight into the table, as if the hour
 * had come, and promoted by the epoch watch's pass within a second), `poison-retention` (expired
 * finished rows of both tenants, one of the second's held by a foreign key an operator added, so
 * Postgres refuses its delete; both tenants' retention an hour: the scenario waits for the
 * sweep's next run), `poison-dns` (`http` jobs of
 * the second tenant to a host whose DNS server never answers, beside `http` jobs of the load
 * tenant to hosts found in /etc/hosts, each its own name and so its own lookup: the workers run
 * in a mount namespace (`unshare -m`, as root; skipped otherwise) whose /etc/resolv.conf names a
 * UDP listener of this process that reads every query and answers none). Each reports how many
 * poison jobs (or schedules, or operations) were set aside with their reason; the load's figures
 * are the other tenant's.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBenchDatabase } from './lib/bench-db';
import { arg, freePort, sleep } from './lib/local';
import { FaultProxy } from './lib/fault-proxy';
import { startPostgres } from './lib/private-postgres';
import { spawnRole } from './throughput';

const log = (msg: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} chaos: ${msg}\n`);
const ADMIN = 'chaos-admin-token-0123456789';
const LOG_DIR = process.env.CHAOS_LOG_DIR;
const ROLES = ['api', 'promoter', 'dispatcher', 'worker-a', 'worker-b'] as const;
type RoleName = (typeof ROLES)[number];

interface Answer { scenario: string; key: string; at: number; ms: number; status: number }

class Cluster {
  readonly children = new Map<RoleName, ChildProcess>();
  readonly ports = new Map<RoleName, number>();

  constructor(
    private readonly env: Record<string, string>,
    /** Settings of one role only (worker-b reaches Redis and Postgres through fault proxies). */
    private readonly roleEnv: Partial<Record<RoleName, Record<string, string>>> = {},
    /** A command the workers run under (the DNS jail), or none. */
    private readonly workerPrefix?: string[],
  ) {}

  async start(role: RoleName, extraEnv: Record<string, string> = {}): Promise<void> {
    const env = {
      ALMANAC_LOG_LEVEL: LOG_DIR ? 'warn' : 'error', ...this.env, ...this.roleEnv[role], ...extraEnv, ALMANAC_WORKER_ID: `chaos-${role}-${Date.now()}`,
    };
    // CHAOS_LOG_DIR=<dir>: each role's log lines go to <dir>/<role>.log (appended across restarts).
    const started = await spawnRole(role.startsWith('worker') ? 'worker' : role, env, role, {
      port: this.ports.get(role),
      logFile: LOG_DIR === undefined ? undefined : join(LOG_DIR, `${role}.log`),
      prefix: role.startsWith('worker') ? this.workerPrefix : undefined,
    });
    this.ports.set(role, started.port);
    this.children.set(role, started.child);
  }

  async stop(role: RoleName, signal: NodeJS.Signals): Promise<void> {
    const child = this.children.get(role);
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    const force = setTimeout(() => child.kill('SIGKILL'), 40_000);
    await exited;
    clearTimeout(force);
  }

  /** Starts a second process of `role` (new port), then SIGTERMs the first and waits for it. */
  async replace(role: RoleName, extraEnv: Record<string, string> = {}): Promise<void> {
    const old = this.children.get(role);
    this.ports.delete(role);
    await this.start(role, extraEnv);
    if (!old || old.exitCode !== null) return;
    const exited = new Promise((r) => old.once('exit', r));
    old.kill('SIGTERM');
    await exited;
  }

  get apiUrl(): string {
    return `http://127.0.0.1:${this.ports.get('api')}`;
  }
}

class RedisServer {
  child!: ChildProcess;
  constructor(readonly port: number) {}
  start(): void {
    this.child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--hz', '100'], { stdio: 'ignore' });
  }
  async kill(): Promise<void> {
    const exited = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGKILL');
    await exited;
  }
}

/** libfaketime, from Debian's faketime package (bench/chaos.ts skips the skew scenarios without it). */
const FAKETIME_LIB = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
/** ±5 s on one role at a time (issue 12). */
const SKEWS: [RoleName, string][] = existsSync(FAKETIME_LIB) ? [['worker-a', '+5s'], ['worker-a', '-5s'], ['dispatcher', '-5s'], ['dispatcher', '+5s'], ['promoter', '+5s']] : [];

function signalAll(pids: number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // gone meanwhile
    }
  }
}

interface PoisonReport { posted: number; setAside: number; note: string }

/** Names the load tenant's `http` jobs call, each found in the jail's /etc/hosts (127.0.0.1). */
const DNS_HOSTS = 400;
const DNS_SERVER = '127.0.0.77';

/**
 * The workers' view of DNS for `poison-dns`: a mount namespace whose /etc/resolv.conf names
 * DNS_SERVER, where a UDP socket of this process reads every query and answers none (nothing
 * listening would answer at once with "port unreachable"), and whose /etc/hosts knows the load
 * tenant's names. Null without root or `unshare` (the scenario is skipped).
 */
async function dnsJail(): Promise<{ prefix: string[]; queries: () => number; close: () => void } | null> {
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/unshare')) return null;
  const dir = mkdtempSync(join(tmpdir(), 'chaos-dns-'));
  writeFileSync(join(dir, 'resolv.conf'), `nameserver ${DNS_SERVER}\noptions timeout:5 attempts:2\n`);
  writeFileSync(join(dir, 'hosts'), ['127.0.0.1 localhost', ...Array.from({ length: DNS_HOSTS }, (_, i) => `127.0.0.1 h${i}.chaos.test`)].join('\n') + '\n');
  const socket = createSocket('udp4');
  let queries = 0;
  socket.on('message', () => queries++);
  await new Promise<void>((resolve, reject) => socket.once('error', reject).bind(53, DNS_SERVER, resolve));
  const script = 'mount --bind "$0" /etc/resolv.conf && mount --bind "$1" /etc/hosts && shift && exec "$@"';
  return { prefix: ['unshare', '-m', 'sh', '-c', script, join(dir, 'resolv.conf'), join(dir, 'hosts')], queries: () => queries, close: () => socket.close() };
}

/** The load tenant's `http` jobs' receiver: answers 204 to everything. */
async function hookSink(): Promise<{ port: number; received: () => number; close: () => Promise<void> }> {
  let received = 0;
  const server = createServer((req, res) => {
    req.resume().on('end', () => {
      received++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, received: () => received, close: () => new Promise((r) => server.close(() => r())) };
}

/** Lets a tenant's `http` jobs call `hosts` and gives it a signing secret (a tenant without one has its calls discarded). */
async function allowHttp(apiUrl: string, tenantId: number, hosts: string[]): Promise<void> {
  const admin = { Authorization: `Bearer ${ADMIN}`, 'Content-Type': 'application/json' };
  const patched = await fetch(`${apiUrl}/v1/admin/tenants/${tenantId}`, { method: 'PATCH', headers: admin, body: JSON.stringify({ httpAllowHosts: hosts }) });
  if (!patched.ok) throw new Error(`allow-list of tenant ${tenantId}: ${patched.status} ${await patched.text()}`);
  const secret = await fetch(`${apiUrl}/v1/admin/tenants/${tenantId}/signing-secrets`, { method: 'POST', headers: admin, body: '{}' });
  if (!secret.ok) throw new Error(`signing secret of tenant ${tenantId}: ${secret.status} ${await secret.text()}`);
}

/** A trigger that makes Postgres refuse what the scenario poisons, for rows keyed `<prefix>…`. */
const POISON_TRIGGERS: Record<'claim' | 'completion', { table: string; body: string }> = {
  // The claim (queued → running) of a poison row fails: the whole claim batch did, of every tenant.
  claim: { table: 'jobs', body: `IF NEW.key LIKE 'poison-claim-%' AND NEW.state = 'r' THEN RAISE EXCEPTION 'poison' USING ERRCODE = '22003'; END IF;` },
  // A poison job's history row is refused while it carries no error text of Almanac's: the whole
  // completion group commit failed, of every tenant, until it is written without its values.
  completion: {
    table: 'job_attempts',
    body: `IF NEW.error IS NULL AND EXISTS (SELECT 1 FROM jobs WHERE id = NEW.job_id AND key LIKE 'poison-done-%') THEN RAISE EXCEPTION 'poison' USING ERRCODE = '22021'; END IF;`,
  },
};

async function withPoisonTrigger(
  db: { dataSource: { query: (sql: string) => Promise<unknown> } },
  which: 'claim' | 'completion' | 'recurring' | 'bulk' | 'promotion',
  during: () => Promise<void>,
  /** For `recurring`: the poison schedule, whose occurrence rows Postgres refuses. */
  scheduleId = '',
): Promise<void> {
  const { table, body } =
    which === 'recurring'
      ? { table: 'jobs', body: `IF NEW.key LIKE 'schedule:${scheduleId}:%' THEN RAISE EXCEPTION 'poison' USING ERRCODE = '22003'; END IF;` }
      : which === 'bulk' || which === 'promotion'
        ? { table: 'jobs', body: `IF NEW.key LIKE 'poison-${which === 'bulk' ? 'bulk' : 'promo'}-%' AND NEW.state = '${which === 'bulk' ? 'c' : 'q'}' THEN RAISE EXCEPTION 'poison' USING ERRCODE = '22003'; END IF;` }
        : POISON_TRIGGERS[which];
  await db.dataSource.query(`CREATE FUNCTION chaos_poison_${which}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${body} RETURN NEW; END $$`);
  await db.dataSource.query(`CREATE TRIGGER chaos_poison_${which} BEFORE INSERT OR UPDATE ON ${table} FOR EACH ROW EXECUTE FUNCTION chaos_poison_${which}()`);
  try {
    await during();
  } finally {
    await db.dataSource.query(`DROP TRIGGER chaos_poison_${which} ON ${table}; DROP FUNCTION chaos_poison_${which}()`);
  }
}

/** POSTs `n` jobs of the poison tenant keyed `<prefix><i>`, due 2 s ahead. */
async function postPoison(apiUrl: string, apiKey: string, prefix: string, kind: string, n: number): Promise<void> {
  const runAt = new Date(Date.now() + 2000).toISOString();
  const jobs = Array.from({ length: n }, (_, i) => ({ kind, key: `${prefix}${i}`, runAt, payload: kind === 'charge' ? { invoiceId: `${prefix}${i}`, amountCents: 1 } : {} }));
  const res = await fetch(`${apiUrl}/v1/jobs/batch`, { method: 'POST', headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ jobs }) });
  if (!res.ok) throw new Error(`poison jobs: ${res.status} ${await res.text()}`);
}

/** Creates a schedule running `noop` every minute; its id. */
async function everyMinute(apiUrl: string, apiKey: string, key: string): Promise<string> {
  const res = await fetch(`${apiUrl}/v1/schedules`, {
    method: 'POST', headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ key, kind: 'noop', cron: '* * * * *', timezone: 'UTC' }),
  });
  if (!res.ok) throw new Error(`schedule ${key}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

/** Starts a bulk cancel of the tenant's jobs keyed `<prefix>…`; its operation id. */
async function bulkCancel(apiUrl: string, apiKey: string, prefix: string): Promise<string> {
  const res = await fetch(`${apiUrl}/v1/jobs/bulk-cancel`, {
    method: 'POST', headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ filter: { keyPrefix: prefix } }),
  });
  if (res.status !== 202) throw new Error(`bulk cancel ${prefix}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

/** Well-shaped random keys from this process (the load's own address) for `ms`; the answers by status. */
async function tokenFlood(apiUrl: string, ms: number): Promise<Record<number, number>> {
  const statuses: Record<number, number> = {};
  const until = Date.now() + ms;
  const lane = async () => {
    while (Date.now() < until) {
      const junk = `alm_${randomBytes(32).toString('base64url')}`;
      const status = await fetch(`${apiUrl}/v1/jobs?limit=1`, { headers: { Authorization: `Bearer ${junk}` }, signal: AbortSignal.timeout(5000) }).then((r) => r.status, () => 0);
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: 8 }, lane));
  return statuses;
}

async function main(): Promise<void> {
  const rate = Number(arg('rate', '50'));
  const scenarioMs = Number(arg('scenario-seconds', '25')) * 1000;
  const stallMs = Number(arg('stall-seconds', '20')) * 1000;
  const drainMs = Number(arg('drain', '240000'));
  const pg = await startPostgres();
  process.env.ALMANAC_BENCH_PG_URL = pg.url;
  const db = await createBenchDatabase('almanac_chaos', 2);
  const redis = new RedisServer(await freePort());
  redis.start();
  await sleep(300);
  const env = {
    NODE_ENV: 'production', DATABASE_URL: db.url, REDIS_URL: `redis://127.0.0.1:${redis.port}`, ALMANAC_ADMIN_TOKEN: ADMIN,
    ALMANAC_RATE_LIMIT_PER_SECOND: '0', ALMANAC_REQUEST_RATE_LIMIT_PER_SECOND: '0',
  };
  const cutMs = Number(arg('cut-seconds', '20')) * 1000;
  const jail = await dnsJail();
  const sink = await hookSink();
  Object.assign(env, {
    ALMANAC_HTTP_ALLOW_HOSTS: `http://never.chaos.test,http://*.chaos.test:${sink.port}`,
    ALMANAC_HTTP_ALLOW_CIDRS: '127.0.0.0/8',
  });
  const pgProxy = new FaultProxy(pg.port);
  const redisProxy = new FaultProxy(redis.port);
  await pgProxy.start();
  await redisProxy.start();
  const cluster = new Cluster(env, {
    'worker-b': { DATABASE_URL: db.url.replace(`:${pg.port}/`, `:${pgProxy.port}/`), REDIS_URL: `redis://127.0.0.1:${redisProxy.port}` },
  }, jail?.prefix);
  const poison = { key: '', loadKey: '', reports: new Map<string, PoisonReport>() };
  const scenarios: [string, () => Promise<void>][] = [
    ...ROLES.map((role): [string, () => Promise<void>] => [`sigkill-${role}`, async () => {
      await cluster.stop(role, 'SIGKILL');
      await sleep(1000);
      await cluster.start(role);
    }]),
    ['rolling-restart', async () => {
      // As a Deployment rolls (maxSurge): the new process is up before the old one gets SIGTERM.
      for (const role of ROLES) await cluster.replace(role);
    }],
    ['postgres-restart', async () => pg.restart()],
    ['postgres-stall', async () => {
      const pids = pg.pids();
      signalAll(pids, 'SIGSTOP');
      await sleep(stallMs);
      signalAll(pids, 'SIGCONT');
    }],
    ['redis-restart', async () => {
      await redis.kill();
      redis.start(); // empty: no persistence
    }],
    ['worker-cut-off-redis', async () => {
      redisProxy.blackhole();
      await sleep(cutMs);
      redisProxy.heal();
    }],
    ['worker-cut-off-postgres', async () => {
      pgProxy.blackhole();
      await sleep(cutMs);
      pgProxy.heal();
    }],
    // Clock skew: the role is replaced by one whose wall clock runs `skew` off (libfaketime, the
    // Debian faketime package; monotonic clocks stay real so timers behave), held for
    // --cut-seconds, then replaced by one with the true time again.
    ...SKEWS.map(([role, skew]): [string, () => Promise<void>] => [`clock-skew-${role}${skew}`, async () => {
      await cluster.replace(role, { LD_PRELOAD: FAKETIME_LIB, FAKETIME: skew, FAKETIME_DONT_FAKE_MONOTONIC: '1', FAKETIME_NO_CACHE: '1' });
      await sleep(cutMs);
      await cluster.replace(role);
    }]),
    ['redis-stall', async () => {
      signalAll([redis.child.pid as number], 'SIGSTOP');
      await sleep(stallMs);
      signalAll([redis.child.pid as number], 'SIGCONT');
    }],
    ['poison-claim', async () => {
      await withPoisonTrigger(db, 'claim', async () => {
        await postPoison(cluster.apiUrl, poison.key, 'poison-claim-', 'charge', 20);
        await sleep(cutMs);
      });
      const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE key LIKE 'poison-claim-%' AND state = 'x' AND last_error LIKE 'SetAsideError:%'`);
      poison.reports.set('poison-claim', { posted: 20, setAside: n as number, note: 'dead with errorCode set_aside' });
    }],
    ['poison-completion', async () => {
      await withPoisonTrigger(db, 'completion', async () => {
        await postPoison(cluster.apiUrl, poison.key, 'poison-done-', 'noop', 20);
        await sleep(cutMs);
      });
      const [{ n }] = await db.dataSource.query(
        `SELECT count(*)::int AS n FROM jobs j WHERE j.key LIKE 'poison-done-%' AND j.state = 'd'
            AND EXISTS (SELECT 1 FROM job_attempts a WHERE a.job_id = j.id AND a.error LIKE '%could not be stored%')`,
      );
      poison.reports.set('poison-completion', { posted: 20, setAside: n as number, note: 'succeeded, its outcome written without its values' });
    }],
    ['poison-recurring', async () => {
      const bad = await everyMinute(cluster.apiUrl, poison.key, 'poison-recurring');
      const good = await everyMinute(cluster.apiUrl, poison.loadKey, 'healthy-recurring');
      let paused: { paused: boolean; last_error: string | null } | undefined;
      await withPoisonTrigger(db, 'recurring', async () => {
        // The promoter's recurring sweep runs every minute: wait for its next run to meet the schedule.
        for (const until = Date.now() + 75_000; Date.now() < until && !paused?.paused; await sleep(1000)) {
          [paused] = await db.dataSource.query(`SELECT paused, last_error FROM schedules WHERE id = $1`, [bad]);
        }
      }, bad);
      const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE key LIKE $1`, [`schedule:${good}:%`]);
      for (const [id, apiKey] of [[bad, poison.key], [good, poison.loadKey]]) {
        await fetch(`${cluster.apiUrl}/v1/schedules/${id}`, { method: 'DELETE', headers: { Authorization: `Bearer ${apiKey}` } });
      }
      poison.reports.set('poison-recurring', {
        posted: 1,
        setAside: paused?.paused && paused.last_error?.startsWith('SetAsideError:') ? 1 : 0,
        note: `schedule paused with its lastError; the other tenant's schedule had ${n as number} occurrences materialised meanwhile`,
      });
    }],
    ['poison-bulk', async () => {
      // A day ahead: jobs nobody runs during the scenario, each tenant's to cancel.
      const later = async (apiKey: string, prefix: string) => {
        const runAt = new Date(Date.now() + 86_400_000).toISOString();
        const jobs = Array.from({ length: 20 }, (_, i) => ({ kind: 'noop', key: `${prefix}${i}`, runAt }));
        const res = await fetch(`${cluster.apiUrl}/v1/jobs/batch`, { method: 'POST', headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ jobs }) });
        if (!res.ok) throw new Error(`jobs ${prefix}: ${res.status}`);
      };
      await later(poison.key, 'poison-bulk-');
      await later(poison.loadKey, 'healthy-bulk-');
      const states = async () =>
        Object.fromEntries((await db.dataSource.query(`SELECT id::text AS id, state, error FROM bulk_operations`)).map((r: { id: string; state: string; error: string | null }) => [r.id, r]));
      let ops: Record<string, { state: string; error: string | null }> = {};
      let bad = '';
      let good = '';
      await withPoisonTrigger(db, 'bulk', async () => {
        bad = await bulkCancel(cluster.apiUrl, poison.key, 'poison-bulk-');
        good = await bulkCancel(cluster.apiUrl, poison.loadKey, 'healthy-bulk-');
        // Three failures in a row, counted at most one per 10 s (the bulk sweep's spacing), fail it: ~20 s and a sweep's interval.
        for (const until = Date.now() + Math.max(cutMs, 40_000); Date.now() < until; await sleep(500)) {
          ops = await states();
          if (ops[bad]?.state === 'failed' && ops[good]?.state === 'done') break;
        }
      });
      const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE key LIKE 'healthy-bulk-%' AND state = 'c'`);
      poison.reports.set('poison-bulk', {
        posted: 1,
        setAside: ops[bad]?.state === 'failed' ? 1 : 0,
        note: `operation ${ops[bad]?.state ?? '?'} (${(ops[bad]?.error ?? '').slice(0, 60)}); the other tenant's ${ops[good]?.state ?? '?'}, ${n as number}/20 cancelled`,
      });
    }],
    ['poison-promotion', async () => {
      const ids = await db.dataSource.query<{ id: number; name: string }[]>(`SELECT id, name FROM tenants WHERE name IN ('chaos', 'chaos-poison')`);
      const idOf = (name: string) => ids.find((t) => t.name === name)!.id;
      const cold = (tenantId: number, prefix: string) =>
        db.dataSource.query(
          `INSERT INTO jobs (tenant_id, key, kind, run_at, state) SELECT $1, $2 || g, 'noop', now() + interval '2 seconds', 's' FROM generate_series(0, 19) g`,
          [tenantId, prefix],
        );
      type Row = { key: string; state: string; last_error: string | null; late_ms: number | null };
      let rows: Row[] = [];
      await withPoisonTrigger(db, 'promotion', async () => {
        await cold(idOf('chaos-poison'), 'poison-promo-');
        await cold(idOf('chaos'), 'healthy-promo-');
        // The epoch watch's promotion pass (each second) promotes rows found due; wait for it to meet these.
        for (const until = Date.now() + 45_000; Date.now() < until; await sleep(500)) {
          rows = await db.dataSource.query(
            `SELECT j.key, j.state, j.last_error, (SELECT extract(epoch FROM min(a.started_at) - j.run_at) * 1000 FROM job_attempts a WHERE a.job_id = j.id)::float8 AS late_ms
               FROM jobs j WHERE j.key LIKE 'poison-promo-%' OR j.key LIKE 'healthy-promo-%'`,
          );
          if (rows.every((r) => (r.key.startsWith('poison') ? r.state === 'x' : r.state === 'd'))) break;
        }
      });
      const poisoned = rows.filter((r) => r.key.startsWith('poison'));
      const healthy = rows.filter((r) => r.key.startsWith('healthy'));
      poison.reports.set('poison-promotion', {
        posted: poisoned.length,
        setAside: poisoned.filter((r) => r.state === 'x' && r.last_error?.startsWith('SetAsideError:')).length,
        note: `dead with errorCode set_aside; the other tenant's ${healthy.filter((r) => r.state === 'd').length}/${healthy.length} cold rows ran, at most ${(Math.max(0, ...healthy.map((r) => r.late_ms ?? 0)) / 1000).toFixed(1)} s after due`,
      });
    }],
    ['poison-retention', async () => {
      const admin = { Authorization: `Bearer ${ADMIN}`, 'Content-Type': 'application/json' };
      const ids = await db.dataSource.query<{ id: number; name: string }[]>(`SELECT id, name FROM tenants WHERE name IN ('chaos', 'chaos-poison')`);
      for (const { id } of ids) {
        const res = await fetch(`${cluster.apiUrl}/v1/admin/tenants/${id}`, { method: 'PATCH', headers: admin, body: JSON.stringify({ retentionSeconds: 3600 }) });
        if (!res.ok) throw new Error(`retention of tenant ${id}: ${res.status}`);
      }
      const expired = (tenantId: number, prefix: string) =>
        db.dataSource.query(
          `INSERT INTO jobs (tenant_id, key, kind, run_at, finished_at, state, attempts) SELECT $1, $2 || g, 'noop', now() - interval '2 hours', now() - interval '2 hours', 'd', 1 FROM generate_series(0, 19) g`,
          [tenantId, prefix],
        );
      await expired(ids.find((t) => t.name === 'chaos-poison')!.id, 'poison-ret-');
      await expired(ids.find((t) => t.name === 'chaos')!.id, 'healthy-ret-');
      await db.dataSource.query(`CREATE TABLE chaos_poison_ref (job_id bigint REFERENCES jobs (id))`);
      await db.dataSource.query(`INSERT INTO chaos_poison_ref SELECT id FROM jobs WHERE key = 'poison-ret-0'`);
      const left = async () =>
        Object.fromEntries((await db.dataSource.query<{ k: string; n: number }[]>(
          `SELECT split_part(key, '-', 1) || (key = 'poison-ret-0')::text AS k, count(*)::int AS n FROM jobs WHERE key LIKE 'poison-ret-%' OR key LIKE 'healthy-ret-%' GROUP BY 1`,
        )).map((r) => [r.k, r.n]));
      let rows: Record<string, number> = {};
      try {
        // The retention sweep runs every minute: wait for its next run to meet these rows.
        for (const until = Date.now() + 75_000; Date.now() < until; await sleep(1000)) {
          rows = await left();
          if (!rows.healthyfalse && !rows.poisonfalse) break;
        }
      } finally {
        await db.dataSource.query(`DROP TABLE chaos_poison_ref`);
      }
      poison.reports.set('poison-retention', {
        posted: 1,
        setAside: rows.poisontrue === 1 && !rows.poisonfalse ? 1 : 0,
        note: `the row a foreign key holds kept; the poison tenant's other ${19 - (rows.poisonfalse ?? 0)}/19 and the other tenant's ${20 - (rows.healthyfalse ?? 0)}/20 expired rows removed`,
      });
    }],
    ...(jail ? [['poison-dns', async () => {
      const post = async (apiKey: string, jobs: object[]) => {
        const res = await fetch(`${cluster.apiUrl}/v1/jobs/batch`, { method: 'POST', headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ jobs }) });
        const body = (await res.json()) as { errors?: number };
        if (!res.ok || body.errors) throw new Error(`http jobs: ${res.status} ${JSON.stringify(body).slice(0, 500)}`);
      };
      const t0 = Date.now() + 2000;
      const queriesBefore = jail.queries();
      // The poison's lookups start first and keep coming: 20 jobs, one attempt each.
      await post(poison.key, Array.from({ length: 20 }, (_, i) => ({
        kind: 'http', key: `poison-dns-${i}`, runAt: new Date(t0 + i * 500).toISOString(), maxAttempts: 1, payload: { url: 'http://never.chaos.test/hook' },
      })));
      // The load tenant's: a new name, so a new connection and a lookup, every 100 ms.
      const healthy = Math.min(DNS_HOSTS, cutMs / 100);
      await post(poison.loadKey, Array.from({ length: healthy }, (_, i) => ({
        kind: 'http', key: `healthy-dns-${i}`, runAt: new Date(t0 + i * 100).toISOString(), payload: { url: `http://h${i}.chaos.test:${sink.port}/hook` },
      })));
      await sleep(cutMs + 5000);
      const [bad] = await db.dataSource.query(
        `SELECT count(*)::int AS n FROM jobs WHERE key LIKE 'poison-dns-%' AND state = 'x' AND (last_error ILIKE '%DNS%' OR last_error LIKE '%EAI_AGAIN%' OR last_error LIKE '%ETIMEOUT%')`,
      );
      const [good] = await db.dataSource.query(
        `SELECT count(*) FILTER (WHERE j.state = 'd')::int AS ok,
                coalesce(max(extract(epoch FROM a.finished_at - j.run_at)), 0)::float8 AS worst_s
           FROM jobs j LEFT JOIN job_attempts a ON a.job_id = j.id AND a.attempt = j.attempts
          WHERE j.key LIKE 'healthy-dns-%'`,
      );
      poison.reports.set('poison-dns', {
        posted: 20,
        setAside: bad.n as number,
        note: `dead on the lookup's timeout, ${jail.queries() - queriesBefore} queries unanswered; the other tenant's ${good.ok as number}/${healthy} http jobs (a lookup each) succeeded, the slowest done ${(good.worst_s as number).toFixed(1)} s after due; ${sink.received()} calls received`,
      });
    }] as [string, () => Promise<void>]] : []),
    ['token-flood', async () => {
      const statuses = await tokenFlood(cluster.apiUrl, cutMs);
      const sent = Object.values(statuses).reduce((a, b) => a + b, 0);
      poison.reports.set('token-flood', { posted: sent, setAside: (statuses[401] ?? 0) + (statuses[503] ?? 0), note: `junk keys answered ${JSON.stringify(statuses)}` });
    }],
  ];
  const only = arg('only', '').split(',').filter(Boolean);
  const chosen = only.length ? scenarios.filter(([name]) => only.includes(name)) : scenarios;
  const answers: Answer[] = [];
  try {
    for (const role of ROLES) await cluster.start(role);
    const res = await fetch(`${cluster.apiUrl}/v1/admin/tenants`, {
      method: 'POST', headers: { Authorization: `Bearer ${ADMIN}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'chaos' }),
    });
    const loadTenant = (await res.json()) as { id: number; apiKey: string };
    const key = loadTenant.apiKey;
    poison.loadKey = key;
    const other = await fetch(`${cluster.apiUrl}/v1/admin/tenants`, {
      method: 'POST', headers: { Authorization: `Bearer ${ADMIN}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'chaos-poison' }),
    });
    const poisonTenant = (await other.json()) as { id: number; apiKey: string };
    poison.key = poisonTenant.apiKey;
    await allowHttp(cluster.apiUrl, loadTenant.id, [`http://*.chaos.test:${sink.port}`]);
    await allowHttp(cluster.apiUrl, poisonTenant.id, ['http://never.chaos.test']);
    let scenario = 'warm-up';
    const faultAt = new Map<string, number>();
    /** When each fault's action returned (a stall resumed, a killed role is back). */
    const faultEnd = new Map<string, number>();
    let stop = false;
    const inFlight = new Set<Promise<void>>();
    const load = (async () => {
      for (let n = 0, next = Date.now(); !stop; n++, next += 1000 / rate) {
        const wait = next - Date.now();
        if (wait > 0) await sleep(wait);
        const job = { kind: 'charge', key: `c-${n}`, runAt: new Date(Date.now() + 2000).toISOString(), payload: { invoiceId: `c-${n}`, amountCents: 100 } };
        const label = scenario;
        const t0 = Date.now();
        const p = fetch(`${cluster.apiUrl}/v1/jobs`, {
          method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: JSON.stringify(job), signal: AbortSignal.timeout(10_000),
        })
          .then(async (r) => ({ status: r.status, body: await r.arrayBuffer() }), () => ({ status: 0, body: null }))
          .then(({ status }) => void answers.push({ scenario: label, key: job.key, at: t0, ms: Date.now() - t0, status }));
        inFlight.add(p);
        void p.finally(() => inFlight.delete(p));
      }
    })();
    await sleep(5000);
    for (const [name, fault] of chosen) {
      scenario = name;
      const started = Date.now();
      await sleep(3000);
      log(`${name}: fault`);
      faultAt.set(name, Date.now());
      await fault();
      faultEnd.set(name, Date.now());
      const left = scenarioMs - (Date.now() - started);
      if (left > 0) await sleep(left);
      log(`${name}: done`);
    }
    stop = true;
    await load;
    await Promise.all([...inFlight]);
    // With CHAOS_LOG_DIR, every answer (scenario, key, sent at, ms, status) beside the roles' logs.
    if (LOG_DIR !== undefined) writeFileSync(join(LOG_DIR, 'answers.json'), JSON.stringify({ faultAt: Object.fromEntries(faultAt), faultEnd: Object.fromEntries(faultEnd), answers }));
    const accepted = answers.filter((a) => a.status === 200 || a.status === 201).map((a) => a.key);
    log(`${answers.length} requests, ${accepted.length} accepted; waiting for them to run`);
    for (const deadline = Date.now() + drainMs; Date.now() < deadline; await sleep(1000)) {
      const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE key = ANY($1) AND state = 'd'`, [accepted]);
      if (n >= accepted.length) break;
    }
    const rows: { key: string; state: string; attempts: number; run_at_ms: number; lateness_ms: number | null; charges: number }[] = await db.dataSource.query(
      `SELECT j.key, j.state, j.attempts, (extract(epoch FROM j.run_at) * 1000)::float8 AS run_at_ms,
              -- The effect's time by Postgres's clock (charges.created_at, the handler's transaction
              -- start), not the attempt's started_at, which the worker stamps with its own clock.
              (SELECT extract(epoch FROM min(c.created_at) - j.run_at) * 1000 FROM charges c
                WHERE c.tenant_id = j.tenant_id AND c.invoice_id = j.key)::float8 AS lateness_ms,
              (SELECT count(*)::int FROM charges c WHERE c.tenant_id = j.tenant_id AND c.invoice_id = j.key) AS charges
         FROM jobs j WHERE j.key = ANY($1)`,
      [accepted],
    );
    const byKey = new Map(rows.map((r) => [r.key, r]));
    const report = ['warm-up', ...chosen.map(([name]) => name)].map((name) => {
      const mine = answers.filter((a) => a.scenario === name);
      const ok = mine.filter((a) => a.status === 200 || a.status === 201);
      const jobs = ok.map((a) => byKey.get(a.key));
      const errors = mine.filter((a) => a.status === 0 || a.status >= 500).length;
      return {
        scenario: name,
        requests: mine.length,
        accepted: ok.length,
        apiErrors: errors,
        apiErrorRate: mine.length ? errors / mine.length : 0,
        answeredOver3s: mine.filter((a) => a.ms > 3000).length,
        // status 0: no answer (connection refused, or the 10 s client timeout)
        statuses: Object.fromEntries([...new Set(mine.map((a) => a.status))].map((st) => [st, mine.filter((a) => a.status === st).length])),
        slowestAnswerMs: Math.max(0, ...mine.map((a) => a.ms)),
        lost: jobs.filter((j) => !j || j.state !== 'd').length,
        duplicateCharges: jobs.filter((j) => j && j.charges > 1).length,
        extraAttempts: jobs.reduce((n, j) => n + Math.max(0, (j?.attempts ?? 1) - 1), 0),
        maxLatenessMs: Math.max(0, ...jobs.map((j) => j?.lateness_ms ?? 0)),
        // A job due while the fault lasted cannot run before it ends (a 60 s stall makes a job
        // due as it begins 60 s late whatever happens next): this is the time lost after that.
        maxLatenessPastFaultMs: Math.max(0, ...jobs.map((j) => {
          if (!j || j.lateness_ms === null) return 0;
          const ranAt = j.run_at_ms + j.lateness_ms;
          return ranAt - Math.max(j.run_at_ms, faultEnd.get(name) ?? 0);
        })),
        ...(poison.reports.has(name) ? { poison: poison.reports.get(name) } : {}),
      };
    });
    // The latest job of each scenario, to tell a fault's own length from time lost afterwards.
    for (const name of ['warm-up', ...chosen.map(([n]) => n)]) {
      const late = answers.filter((a) => a.scenario === name && (a.status === 200 || a.status === 201))
        .map((a) => ({ a, j: byKey.get(a.key) }))
        .sort((x, y) => (y.j?.lateness_ms ?? 0) - (x.j?.lateness_ms ?? 0))[0];
      const since = faultAt.has(name) ? ` ${((late.a.at - (faultAt.get(name) ?? 0)) / 1000).toFixed(1)} s after the fault began` : '';
      if (late?.j?.lateness_ms) log(`${name}: latest job ${late.a.key}, posted${since}, ran ${(late.j.lateness_ms / 1000).toFixed(1)} s after its due time`);
    }
    for (const r of report) {
      log(`${r.scenario.padEnd(18)} ${r.accepted}/${r.requests} accepted, ${(r.apiErrorRate * 100).toFixed(1)} % errors, ${r.answeredOver3s} over 3 s, ` +
        `lost ${r.lost}, duplicate charges ${r.duplicateCharges}, extra attempts ${r.extraAttempts}, max lateness ${(r.maxLatenessMs / 1000).toFixed(1)} s (${(r.maxLatenessPastFaultMs / 1000).toFixed(1)} s past the fault)` +
        (r.poison ? `; poison ${r.poison.setAside}/${r.poison.posted} set aside (${r.poison.note})` : ''));
    }
    process.stdout.write(`${JSON.stringify({ bench: 'chaos', at: new Date().toISOString(), inputs: { rate, scenarioMs, stallMs }, scenarios: report }, null, 2)}\n`);
  } finally {
    for (const role of [...ROLES].reverse()) await cluster.stop(role, 'SIGTERM').catch(() => undefined);
    await redis.kill().catch(() => undefined);
    jail?.close();
    await sink.close().catch(() => undefined);
    await pgProxy.stop().catch(() => undefined);
    await redisProxy.stop().catch(() => undefined);
    await db.drop().catch(() => undefined);
    pg.stop();
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
