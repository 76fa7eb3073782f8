import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Client, Pool } from 'pg';
import { benchServerUrl } from './bench-server';

/** One role process cluster.js started, as it prints it. */
export interface ClusterInstance { name: string; pid: number; port: number }

/**
 * `npm run cluster` (scripts/cluster.js of `root`) as a child process, ready once it prints
 * its instances (bench/fairness.ts, bench/autoscale.ts). With `logDir`, every line it prints
 * also goes to a file there (default: BENCH_ROLE_LOG_DIR).
 */
export class ClusterProcess {
  private child?: ChildProcess;
  apiUrl = '';
  /** Processes it started (api, promoter, dispatcher, worker-N): each one is a scrape target. */
  readonly instances: ClusterInstance[] = [];
  private readonly tail: string[] = [];
  private logFile?: WriteStream;

  constructor(
    private readonly root: string,
    private readonly workers: number,
    private readonly env: Record<string, string>,
    private readonly echo: (line: string) => void,
    private readonly logDir = process.env.BENCH_ROLE_LOG_DIR,
  ) {}

  /** Where cluster.js writes its Prometheus targets (file_sd). */
  get targetsFile(): string {
    return join(this.root, '.data/cluster/targets.json');
  }

  async start(): Promise<void> {
    // Below the kernel's ephemeral range (32768-60999 here): a port the OS picked as free lies
    // in it, and the outgoing connections of the roles starting meanwhile took base + 1 before
    // the promoter bound it (EADDRINUSE, a failed tracing bench). cluster.js moves on from a taken one.
    const basePort = 20_000 + 20 * Math.floor(Math.random() * 600);
    const args = [join(this.root, 'scripts/cluster.js'), '--workers', String(this.workers), '--base-port', String(basePort)];
    if (this.logDir) {
      mkdirSync(this.logDir, { recursive: true });
      this.logFile = createWriteStream(join(this.logDir, `cluster-${Date.now()}.log`));
    }
    const child = spawn(process.execPath, args, { cwd: this.root, env: { ...process.env, ...this.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    let ready!: () => void;
    const isReady = new Promise<void>((r) => (ready = r));
    const keep = (line: string) => {
      this.tail.push(line);
      if (this.tail.length > 200) this.tail.shift();
      this.logFile?.write(`${line}\n`);
      this.echo(line);
    };
    createInterface({ input: child.stdout }).on('line', (line) => {
      keep(line);
      const m = /^\s+(\S+)\s+pid (\d+)\s+http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(line);
      if (m) this.instances.push({ name: m[1], pid: Number(m[2]), port: Number(m[3]) });
      const api = /^\s+API: (http:\/\/\S+)/.exec(line);
      if (api) this.apiUrl = api[1];
      if (line.startsWith('Ctrl-C stops them all')) ready();
    });
    createInterface({ input: child.stderr }).on('line', keep);
    const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`scripts/cluster.js exited (${code}) before it was ready:\n${this.lastLines()}`))));
    // cluster.js builds dist/ first when it is older than the sources: minutes on 2 cores.
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`scripts/cluster.js not ready after 600 s:\n${this.lastLines()}`)), 600_000)));
    try {
      await Promise.race([isReady, exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
    if (!this.apiUrl) throw new Error('scripts/cluster.js did not print the API address');
  }

  /** One SIGTERM, as Ctrl-C does: cluster.js stops every role (each drains) and exits. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    const force = setTimeout(() => child.kill('SIGKILL'), 60_000);
    await exited;
    clearTimeout(force);
    this.logFile?.end();
  }

  lastLines(): string {
    return this.tail.slice(-40).join('\n');
  }
}

export interface BenchDb {
  url: string;
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  drop(): Promise<void>;
}

/**
 * An empty database on ALMANAC_BENCH_PG_URL; cluster.js migrates it with the --root checkout's
 * own migrations (a database migrated by this checkout's would mix schemas in an A/B).
 */
export async function emptyDatabase(prefix: string): Promise<BenchDb> {
  const server = benchServerUrl();
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = async (sql: string) => {
    const c = new Client({ connectionString: `${server}/postgres` });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = `${server}/${name}`;
  const pool = new Pool({ connectionString: url, max: 2 });
  return {
    url,
    query: async <T>(sql: string, params: unknown[] = []) => (await pool.query(sql, params)).rows as T[],
    async drop() {
      await pool.end();
      await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

/**
 * An empty database (emptyDatabase) migrated by `root`'s own built migrations
 * (`node <root>/scripts/migrate.js`, the step `npm run migrate` and cluster.js run), for benches
 * that start `root`'s roles from its dist/ themselves (bench/throughput.ts --root): in an A/B
 * the schema is the one the code under test expects, not this checkout's sources'.
 */
export async function migratedDatabase(prefix: string, root: string): Promise<BenchDb> {
  const script = join(root, 'scripts/migrate.js');
  if (!existsSync(script)) throw new Error(`${script} is missing: --root must be an Almanac checkout`);
  const db = await emptyDatabase(prefix);
  const r = spawnSync(process.execPath, [script], { cwd: root, env: { ...process.env, DATABASE_URL: db.url }, encoding: 'utf8' });
  if (r.status !== 0) {
    await db.drop().catch(() => undefined);
    throw new Error(`node ${script} exited with ${r.status ?? r.signal}: ${`${r.stdout}${r.stderr}`.trim().slice(-2000)}`);
  }
  return db;
}
