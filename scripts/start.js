#!/usr/bin/env node
// @ts-check
'use strict';
// `npm start`: run every Almanac role in one process on this machine.
//   1. build if dist/ is missing or older than the sources;
//   2. find Postgres and Redis (DATABASE_URL/REDIS_URL, else 127.0.0.1:5432/6379, else private
//      servers in .data/ launched from the machine's binaries and stopped on exit);
//   3. start the all-in-one app (it applies pending migrations first), wait for /health/ready;
//   4. print where the API listens and a demo tenant's key with curl lines to paste.
// `npm start -- --check` does all of that, posts one job with the demo key, then shuts down:
// CI uses it to prove the front door works on a clean clone.
const crypto = require('node:crypto');
const path = require('node:path');
const { info, warn, StartError, errorMessage } = require('./lib/log');
const { ensureBuilt } = require('./lib/build');
const { canConnect } = require('./lib/net');
const { resolveServices, checkServiceSettings } = require('./lib/local-services');
const { spawnApp, waitReady } = require('./lib/app');
const { demoTenant, curlTour } = require('./lib/demo-tenant');

const root = path.resolve(__dirname, '..');
const SHUTDOWN_GRACE_MS = 30_000;

function checkNode() {
  const [major, minor] = process.versions.node.split('.').map(Number);
  // Nest 12 is ESM-only; a CommonJS app can require() it only from Node 20.19 on.
  if (major < 20 || (major === 20 && minor < 19)) {
    throw new StartError(`Node ${process.versions.node} is too old: Almanac needs Node 20.19 or newer.`);
  }
}

/**
 * @param {NodeJS.ProcessEnv} env
 * @returns {number} PORT, validated (default 3000)
 */
function appPort(env) {
  const raw = env.PORT || '3000';
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new StartError(`PORT must be a TCP port, got "${raw}"`);
  return port;
}

/**
 * The smoke test behind --check: a noop job due now, posted with the demo key, must come back
 * `succeeded`, which takes every role (api, dispatcher, worker) in the one process.
 * @param {string} baseUrl
 * @param {string} apiKey
 * @returns {Promise<void>}
 */
async function roundTrip(baseUrl, apiKey) {
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const key = `start-check:${Date.now()}`;
  const post = await fetch(`${baseUrl}/v1/jobs`, {
    method: 'POST', headers, body: JSON.stringify({ kind: 'noop', key, runAt: new Date().toISOString() }),
  });
  if (post.status !== 201) throw new Error(`POST /v1/jobs answered ${post.status}: ${await post.text()}`);
  const deadline = Date.now() + 30_000;
  let state = 'unknown';
  while (Date.now() < deadline) {
    const get = await fetch(`${baseUrl}/v1/jobs?key=${encodeURIComponent(key)}`, { headers });
    if (get.status !== 200) throw new Error(`GET /v1/jobs?key= answered ${get.status}: ${await get.text()}`);
    // With `key`, GET /v1/jobs answers the one job (a JobDetail), not a page.
    ({ state } = /** @type {{ state: string }} */ (await get.json()));
    if (state === 'succeeded') {
      info(`check: job ${key} was ingested, dispatched and run (succeeded)`);
      return;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`job ${key} was still "${state}" after 30 s`);
}

async function main() {
  const check = process.argv.includes('--check');
  checkNode();
  const port = appPort(process.env);
  checkServiceSettings(process.env);
  if (await canConnect('127.0.0.1', port)) {
    throw new StartError(`port ${port} is already in use: stop what listens there or set PORT=<another port>.`);
  }
  ensureBuilt(root);

  const services = await resolveServices({ root, env: process.env });
  /** @type {import('./lib/app').AppProcess | null} */
  let app = null;
  /** @type {Promise<void> | null} */
  let stopping = null;

  // Stop order: the app drains first, then the private servers it was using.
  /**
   * @param {string} reason
   * @param {number} code the exit code once everything has stopped
   * @returns {Promise<void>}
   */
  const shutdown = (reason, code) => {
    if (stopping) return stopping;
    stopping = (async () => {
      if (app && app.child.exitCode === null && app.child.signalCode === null) {
        const { child, exited } = app;
        info(`${reason}: stopping the app`);
        child.kill('SIGTERM');
        const killer = setTimeout(() => {
          warn(`the app did not stop within ${SHUTDOWN_GRACE_MS / 1000} s; killing it`);
          child.kill('SIGKILL');
        }, SHUTDOWN_GRACE_MS);
        await exited;
        clearTimeout(killer);
      }
      await services.stop();
      process.exit(code);
    })();
    return stopping;
  };
  let firstSignalAt = 0;
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => {
      // A repeat within a second is the same Ctrl-C relayed (e.g. by npm); a later one means "now".
      if (firstSignalAt && Date.now() - firstSignalAt < 1000) return;
      if (firstSignalAt) {
        warn('second signal: killing the app without waiting');
        if (app) app.child.kill('SIGKILL');
        services.stopSync();
        process.exit(1);
      }
      firstSignalAt = Date.now();
      void shutdown(`${sig} received (send it again to force)`, sig === 'SIGINT' ? 130 : 143);
    });
  }
  process.on('exit', () => {
    if (app && app.child.exitCode === null && app.child.signalCode === null) app.child.kill('SIGKILL');
    services.stopSync();
  });

  const generatedToken = !process.env.ALMANAC_ADMIN_TOKEN;
  const adminToken = process.env.ALMANAC_ADMIN_TOKEN || crypto.randomBytes(24).toString('base64url');
  const env = {
    ...process.env,
    DATABASE_URL: services.databaseUrl,
    REDIS_URL: services.redisUrl,
    ALMANAC_ADMIN_TOKEN: adminToken,
    // The console here is plain http on this machine: its cookie cannot be Secure for every
    // browser (not every one keeps a Secure cookie set over http://localhost).
    ALMANAC_CONSOLE_SECURE_COOKIE: process.env.ALMANAC_CONSOLE_SECURE_COOKIE ?? 'false',
    PORT: String(port),
  };

  // The all-in-one entry applies pending migrations before it listens (bootstrapRole migrate: true)
  // and exits non-zero naming the cause when one fails; `npm run migrate` does the same step alone.
  app = spawnApp(root, env);
  void app.exited.then(({ code, signal }) => {
    if (stopping) return;
    warn(`the app exited (${signal ? `signal ${signal}` : `code ${code}`})`);
    void shutdown('app exited', code === 0 ? 0 : 1);
  });

  const baseUrl = `http://localhost:${port}`;
  await waitReady(`http://127.0.0.1:${port}`, app.exited);

  const lines = ['', `Almanac is running: ${baseUrl}  (every role in one process)`,
    `  health   ${baseUrl}/health/ready   metrics ${baseUrl}/metrics`];
  const docs = await fetch(`${baseUrl}/docs`).then((r) => r.status, () => 0);
  if (docs === 200) lines.push(`  API docs ${baseUrl}/docs`);
  lines.push(`  console  ${baseUrl}/console   (sign in with a tenant's API key, or the admin token for every tenant)`);
  if (generatedToken) lines.push(`  admin token for this session: ALMANAC_ADMIN_TOKEN=${adminToken}`);

  let demo = null;
  try {
    demo = await demoTenant({ baseUrl, adminToken, dataRoot: path.join(root, '.data') });
  } catch (err) {
    warn(`could not create the demo tenant: ${errorMessage(err)}`);
  }
  if (demo) {
    lines.push('', `Demo tenant "${demo.name}" (id ${demo.tenantId}${demo.reused ? ', kept from an earlier run' : ''}). Try:`);
    for (const l of curlTour(baseUrl, demo.apiKey)) lines.push(`  ${l}`);
  }
  lines.push('', 'Ctrl-C stops it.', '');
  process.stdout.write(lines.join('\n') + '\n');

  if (check) {
    try {
      if (!demo) throw new Error('no demo tenant to post the check job with');
      await roundTrip(baseUrl, demo.apiKey);
      await shutdown('check passed', 0);
    } catch (err) {
      warn(`check failed: ${errorMessage(err)}`);
      await shutdown('check failed', 1);
    }
  }
}

main().catch((/** @type {unknown} */ err) => {
  if (err instanceof StartError) process.stderr.write(`[almanac] ${err.message}\n`);
  else process.stderr.write(`[almanac] start failed: ${err instanceof Error && err.stack ? err.stack : String(err)}\n`);
  process.exit(1);
});
