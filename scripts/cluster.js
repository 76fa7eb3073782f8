#!/usr/bin/env node
// @ts-check
'use strict';
// `npm run cluster`: Almanac as Kubernetes runs it, on this machine. One process per role
// instance from dist/ (api, promoter, dispatcher, N workers), each on its own port serving
// /health and /metrics, against the same Postgres and Redis `npm start` finds. Log lines are
// prefixed with the instance name; Ctrl-C stops them all (one SIGTERM each, like a pod).
// It writes .data/cluster/targets.json for k8s/monitoring/prometheus.local.yml.
//
//   npm run cluster                          # 2 workers on pool "default"
//   npm run cluster -- --workers 4 --pools default,http   # workers spread over the pools
//   npm run cluster -- --base-port 4100      # api 4100, promoter 4101, dispatcher 4102, workers 4110+
//   npm run cluster -- --check               # start, prove a job runs across processes, stop
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { info, warn, StartError, errorMessage } = require('./lib/log');
const { ensureBuilt } = require('./lib/build');
const { freePort } = require('./lib/net');
const { resolveServices } = require('./lib/local-services');
const { migrate } = require('./lib/migrations');
const { waitReady } = require('./lib/app');
const { roleEntry, startInstance, stopAll, killAllSync, scrapeTargets } = require('./lib/cluster-processes');
const { checkMetrics, roundTrip } = require('./lib/cluster-check');

const root = path.resolve(__dirname, '..');
const TARGETS_FILE = path.join(root, '.data/cluster/targets.json');
/** The worker drains for ALMANAC_WORKER_SHUTDOWN_MS (25 s default); give it the pod's margin. */
const STOP_GRACE_MS = 40_000;
const POOL = /^[a-z0-9][a-z0-9_-]{0,31}$/;

/**
 * @typedef {object} ClusterOptions
 * @property {number} workers
 * @property {string[]} pools worker pools, assigned to the workers in turn
 * @property {number} basePort
 * @property {boolean} check
 * @property {boolean} [help]
 */

/**
 * @param {string[]} argv the arguments after the script name
 * @returns {ClusterOptions}
 */
function parseArgs(argv) {
  /** @type {ClusterOptions} */
  const opts = { workers: 2, pools: ['default'], basePort: 3100, check: false };
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    const value = () => {
      const v = argv[i + 1];
      if (v === undefined) throw new StartError(`${arg} needs a value`);
      i += 1;
      return v;
    };
    if (arg === '--check') opts.check = true;
    else if (arg === '--workers') opts.workers = Number(value());
    else if (arg === '--pools') opts.pools = value().split(',').map((p) => p.trim()).filter(Boolean);
    else if (arg === '--base-port') opts.basePort = Number(value());
    else if (arg === '--help' || arg === '-h') opts.help = true;
    else throw new StartError(`unknown option ${arg} (try --help)`);
  }
  if (!Number.isInteger(opts.workers) || opts.workers < 1 || opts.workers > 50) throw new StartError('--workers must be an integer from 1 to 50');
  if (!Number.isInteger(opts.basePort) || opts.basePort < 1024 || opts.basePort > 65000) throw new StartError('--base-port must be from 1024 to 65000');
  const bad = opts.pools.find((p) => !POOL.test(p));
  if (opts.pools.length === 0 || bad !== undefined) throw new StartError(`--pools must be pool names like default,http (bad: ${JSON.stringify(bad ?? '')})`);
  return opts;
}

/**
 * The instances to run: names, roles, preferred ports and, for workers, their pool.
 * @param {ClusterOptions} opts
 * @returns {import('./lib/cluster-processes').InstancePlan[]}
 */
function plan(opts) {
  /** @type {import('./lib/cluster-processes').InstancePlan[]} */
  const specs = [
    { name: 'api', role: 'api', port: opts.basePort },
    { name: 'promoter', role: 'promoter', port: opts.basePort + 1 },
    { name: 'dispatcher', role: 'dispatcher', port: opts.basePort + 2 },
  ];
  for (let i = 0; i < opts.workers; i += 1) {
    const pool = opts.pools[i % opts.pools.length];
    specs.push({ name: `worker-${i + 1}`, role: 'worker', pool, port: opts.basePort + 10 + i });
  }
  return specs;
}

/** Prints the header comment of this file: the `//` lines right after 'use strict', without the slashes. */
function usage() {
  const lines = fs.readFileSync(__filename, 'utf8').split('\n');
  const from = lines.indexOf("'use strict';") + 1;
  let to = from;
  while (to < lines.length && lines[to].startsWith('//')) to += 1;
  process.stdout.write(lines.slice(from, to).map((l) => l.replace(/^\/\/ ?/, '')).join('\n') + '\n');
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.help) return usage();
  ensureBuilt(root);
  for (const role of ['api', 'promoter', 'dispatcher', 'worker']) {
    if (!fs.existsSync(roleEntry(root, role))) throw new StartError(`${path.relative(root, roleEntry(root, role))} is missing after the build`);
  }

  const services = await resolveServices({ root, env: process.env });
  /** @type {import('./lib/cluster-processes').Instance[]} */
  const instances = [];
  /** @type {Promise<void> | null} */
  let stopping = null;
  /**
   * @param {string} reason
   * @param {number} code the exit code once everything has stopped
   * @returns {Promise<void>}
   */
  const shutdown = (reason, code) => {
    if (stopping) return stopping;
    stopping = (async () => {
      info(`${reason}: stopping ${instances.length} processes`);
      await stopAll(instances, STOP_GRACE_MS, (inst) => warn(`${inst.spec.name} did not stop within ${STOP_GRACE_MS / 1000} s; killing it`));
      fs.rmSync(TARGETS_FILE, { force: true });
      await services.stop();
      process.exit(code);
    })();
    return stopping;
  };
  let signals = 0;
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => {
      signals += 1;
      if (signals > 1) {
        warn('second signal: killing every process without waiting');
        killAllSync(instances);
        services.stopSync();
        process.exit(1);
      }
      void shutdown(`${sig} received`, sig === 'SIGINT' ? 130 : 143);
    });
  }
  process.on('exit', () => {
    killAllSync(instances);
    services.stopSync();
  });

  // Kubernetes runs the migration Job first; so does this (the role entries never migrate).
  const env = {
    ...process.env,
    DATABASE_URL: services.databaseUrl,
    REDIS_URL: services.redisUrl,
    ALMANAC_ADMIN_TOKEN: process.env.ALMANAC_ADMIN_TOKEN || crypto.randomBytes(24).toString('base64url'),
    // Every instance serves admin routes and /metrics on its own PORT (targets.json scrapes
    // there): a shell's ALMANAC_ADMIN_PORT / ALMANAC_METRICS_PORT would be one port for all.
    ALMANAC_ADMIN_PORT: '',
    ALMANAC_METRICS_PORT: '',
  };
  const applied = await migrate(root, env);
  const names = Array.isArray(applied) ? applied : [];
  info(names.length ? `applied ${names.length} migration(s): ${names.join(', ')}` : 'schema is up to date');

  const specs = plan(opts);
  const width = Math.max(...specs.map((s) => s.name.length));
  for (const [i, spec] of specs.entries()) {
    const port = await freePort(spec.port);
    if (port !== spec.port) warn(`port ${spec.port} is taken: ${spec.name} uses ${port}`);
    const instEnv = { ...env, ...(spec.pool ? { ALMANAC_WORKER_POOLS: spec.pool } : {}) };
    const inst = startInstance(root, { ...spec, port, env: instEnv }, i, width);
    instances.push(inst);
    void inst.exited.then(({ code, signal }) => {
      if (stopping) return;
      // Like a pod that died: say so and keep the rest running (the alerts should notice).
      warn(`${spec.name} exited (${signal ? `signal ${signal}` : `code ${code}`})`);
      if (opts.check) void shutdown(`${spec.name} exited during --check`, 1);
    });
  }
  await Promise.all(instances.map((inst) => waitReady(`http://127.0.0.1:${inst.spec.port}`, inst.exited)));

  fs.mkdirSync(path.dirname(TARGETS_FILE), { recursive: true });
  fs.writeFileSync(TARGETS_FILE, JSON.stringify(scrapeTargets(instances), null, 2) + '\n');

  const apiUrl = `http://127.0.0.1:${instances[0].spec.port}`;
  const lines = ['', `Almanac cluster is running: ${instances.length} processes`];
  for (const { spec, child } of instances) {
    lines.push(`  ${spec.name.padEnd(width)}  pid ${String(child.pid).padEnd(7)} http://127.0.0.1:${spec.port}/metrics${spec.pool ? `  pool ${spec.pool}` : ''}`);
  }
  lines.push(`  API: ${apiUrl}`, `  Prometheus targets: ${path.relative(root, TARGETS_FILE)}`,
    '  prometheus --config.file=k8s/monitoring/prometheus.local.yml --storage.tsdb.path=.data/prometheus',
    '', 'Ctrl-C stops them all.', '');
  process.stdout.write(lines.join('\n') + '\n');

  if (opts.check) {
    try {
      await checkMetrics(instances);
      await roundTrip(apiUrl, env.ALMANAC_ADMIN_TOKEN, info);
      await shutdown('check passed', 0);
    } catch (err) {
      warn(`check failed: ${errorMessage(err)}`);
      await shutdown('check failed', 1);
    }
  }
}

main().catch((/** @type {unknown} */ err) => {
  if (err instanceof StartError) process.stderr.write(`[almanac] ${err.message}\n`);
  else process.stderr.write(`[almanac] cluster failed: ${err instanceof Error && err.stack ? err.stack : String(err)}\n`);
  process.exit(1);
});
