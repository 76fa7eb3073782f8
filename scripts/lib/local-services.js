// @ts-check
'use strict';
// Decides where Postgres and Redis are, in this order:
//   1. DATABASE_URL / REDIS_URL when set;
//   2. a server already answering on 127.0.0.1:5432 / 127.0.0.1:6379;
//   3. private servers launched from the machine's binaries in .data/ (stopped on exit).
// ALMANAC_START_SERVICES=private skips step 2; ALMANAC_START_PG_PORT / ALMANAC_START_REDIS_PORT
// choose the private servers' ports (default: 54329 / 63799 when free, else any free port).
const fs = require('node:fs');
const path = require('node:path');
const { info, StartError, errorMessage } = require('./log');
const { canConnect, redisAnswers, freePort } = require('./net');
const { findPostgres, findRedis, installHint } = require('./binaries');
const { startPrivatePostgres } = require('./private-postgres');
const { startPrivateRedis } = require('./private-redis');
const { localSuperuser, ensureDatabase, redact } = require('./database');

const LOCAL = '127.0.0.1';

/** @typedef {{ url: string, from: string }} ServiceChoice where a service is, and why it is that one */
/**
 * How to stop something resolveServices started, in order; `async` (if any) is preferred when
 * there is time to wait, `sync` works from an exit handler.
 * @typedef {object} Stop
 * @property {string} name
 * @property {() => void} sync
 * @property {() => Promise<void>} [async]
 */
/**
 * @typedef {object} Services
 * @property {string} databaseUrl
 * @property {string} redisUrl
 * @property {() => Promise<void>} stop stops the private servers, waiting for each
 * @property {() => void} stopSync stops them without waiting (for exit handlers)
 */

/**
 * A port from env[name], validated; the fallback (not strict: another free port will do) if unset.
 * @param {NodeJS.ProcessEnv} env
 * @param {string} name
 * @param {number} fallback
 * @returns {{ port: number, strict: boolean }}
 */
function portSetting(env, name, fallback) {
  const raw = env[name];
  if (raw === undefined || raw === '') return { port: fallback, strict: false };
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new StartError(`${name} must be a TCP port (1-65535), got "${raw}"`);
  }
  return { port, strict: true };
}

/**
 * @param {NodeJS.ProcessEnv} env
 * @param {string} name
 * @param {number} fallback
 * @returns {Promise<number>}
 */
async function choosePort(env, name, fallback) {
  const { port, strict } = portSetting(env, name, fallback);
  const got = await freePort(port);
  if (strict && got !== port) throw new StartError(`${name}=${port} is already in use on ${LOCAL}`);
  return got;
}

/**
 * One npm start at a time owns .data/: a second one would stop the first one's servers.
 * @param {string} dataRoot
 * @returns {() => void} releases the lock
 */
function takeLock(dataRoot) {
  const file = path.join(dataRoot, 'start.pid');
  try {
    const pid = Number(fs.readFileSync(file, 'utf8').trim());
    if (pid && pid !== process.pid) {
      try {
        process.kill(pid, 0);
        throw new StartError(`another npm start (pid ${pid}) is running private servers from ${dataRoot}; stop it first.`);
      } catch (err) {
        if (err instanceof StartError) throw err;
      }
    }
  } catch (err) {
    if (err instanceof StartError) throw err;
  }
  fs.writeFileSync(file, String(process.pid));
  return () => fs.rmSync(file, { force: true });
}

/**
 * Validates the start script's own knobs up front, before a slow build. Returns the mode.
 * @param {NodeJS.ProcessEnv} env
 * @returns {'auto' | 'private'}
 */
function checkServiceSettings(env) {
  const mode = env.ALMANAC_START_SERVICES || 'auto';
  if (mode !== 'auto' && mode !== 'private') {
    throw new StartError(`ALMANAC_START_SERVICES must be auto or private, got "${mode}"`);
  }
  portSetting(env, 'ALMANAC_START_PG_PORT', 54329);
  portSetting(env, 'ALMANAC_START_REDIS_PORT', 63799);
  return mode;
}

/**
 * Finds or starts Postgres and Redis (see the top of this file) and makes sure the database exists.
 * @param {{ root: string, env: NodeJS.ProcessEnv }} options
 * @returns {Promise<Services>}
 */
async function resolveServices({ root, env }) {
  const mode = checkServiceSettings(env);
  const probeLocal = mode === 'auto';
  /** @type {{ pg: ServiceChoice | null, redis: ServiceChoice | null }} */
  const plan = { pg: null, redis: null };

  if (env.DATABASE_URL) plan.pg = { url: env.DATABASE_URL, from: 'DATABASE_URL' };
  else if (probeLocal && (await canConnect(LOCAL, 5432))) {
    const user = await localSuperuser(LOCAL, 5432);
    plan.pg = { url: `postgres://${user}@${LOCAL}:5432/almanac`, from: `the server on ${LOCAL}:5432` };
  }
  if (env.REDIS_URL) plan.redis = { url: env.REDIS_URL, from: 'REDIS_URL' };
  else if (probeLocal && (await redisAnswers(LOCAL, 6379))) {
    plan.redis = { url: `redis://${LOCAL}:6379`, from: `the server on ${LOCAL}:6379` };
  }

  /** @type {Stop[]} */
  const stops = [];
  if (!plan.pg || !plan.redis) {
    const pgBins = plan.pg ? null : findPostgres();
    const redisBin = plan.redis ? null : findRedis();
    /** @type {import('./binaries').Service[]} */
    const missing = [];
    if (!plan.pg && !pgBins) missing.push('postgres');
    if (!plan.redis && !redisBin) missing.push('redis');
    if (missing.length) {
      throw new StartError(
        `no ${missing.join(' or ')} server is configured or answering on ${LOCAL}, and its binaries ` +
        `(${missing.map((m) => (m === 'postgres' ? 'initdb, pg_ctl' : 'redis-server')).join('; ')}) are not installed.\n` +
        `  Install them:  ${installHint(missing)}\n` +
        '  or set DATABASE_URL / REDIS_URL to servers you already run (or use docker compose up).');
    }
    // `missing` was empty: the binaries each start below needs (redisBin, pgBins) were found.
    const dataRoot = path.join(root, '.data');
    fs.mkdirSync(dataRoot, { recursive: true });
    stops.push({ name: 'lock', sync: takeLock(dataRoot) });
    try {
      if (!plan.redis) {
        const pickPort = () => choosePort(env, 'ALMANAC_START_REDIS_PORT', 63799);
        const redis = await startPrivateRedis({ dataRoot, pickPort, bin: /** @type {string} */ (redisBin) });
        stops.unshift({ name: 'redis', async: () => redis.stop(), sync: () => void redis.stop({ sync: true }) });
        plan.redis = { url: redis.url, from: 'a private redis-server in .data/redis' };
      }
      if (!plan.pg) {
        const pickPort = () => choosePort(env, 'ALMANAC_START_PG_PORT', 54329);
        const pg = await startPrivatePostgres({ dataRoot, pickPort, bins: /** @type {import('./binaries').PostgresBins} */ (pgBins) });
        stops.unshift({ name: 'postgres', sync: () => pg.stop() });
        plan.pg = { url: pg.url, from: 'a private Postgres in .data/postgres' };
      }
    } catch (err) {
      stopAllSync(stops);
      throw err;
    }
  }

  try {
    if (await ensureDatabase(plan.pg.url)) info(`created database ${new URL(plan.pg.url).pathname.slice(1)}`);
  } catch (err) {
    stopAllSync(stops);
    throw err;
  }
  info(`Postgres: ${redact(plan.pg.url)}  (${plan.pg.from})`);
  info(`Redis:    ${redact(plan.redis.url)}  (${plan.redis.from})`);

  return {
    databaseUrl: plan.pg.url,
    redisUrl: plan.redis.url,
    /** Stops private servers (Postgres before Redis is irrelevant; both after the app). */
    async stop() {
      let s;
      while ((s = stops.shift())) {
        if (s.async) await s.async();
        else s.sync();
      }
    },
    stopSync() {
      stopAllSync(stops);
    },
  };
}

/**
 * Runs every stop's `sync`, in order, emptying the list; a failure is reported and the rest still run.
 * @param {Stop[]} stops
 */
function stopAllSync(stops) {
  let s;
  while ((s = stops.shift())) {
    try {
      s.sync();
    } catch (err) {
      process.stderr.write(`[almanac] stopping ${s.name} failed: ${errorMessage(err)}\n`);
    }
  }
}

module.exports = { resolveServices, checkServiceSettings };
