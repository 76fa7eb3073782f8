'use strict';
// Decides where Postgres and Redis are, in this order:
//   1. DATABASE_URL / REDIS_URL when set;
//   2. a server already answering on 127.0.0.1:5432 / 127.0.0.1:6379;
//   3. private servers launched from the machine's binaries in .data/ (stopped on exit).
// ALMANAC_START_SERVICES=private skips step 2; ALMANAC_START_PG_PORT / ALMANAC_START_REDIS_PORT
// choose the private servers' ports (default: 54329 / 63799 when free, else any free port).
const fs = require('node:fs');
const path = require('node:path');
const { info, StartError } = require('./log');
const { canConnect, redisAnswers, freePort } = require('./net');
const { findPostgres, findRedis, installHint } = require('./binaries');
const { startPrivatePostgres } = require('./private-postgres');
const { startPrivateRedis } = require('./private-redis');
const { localSuperuser, ensureDatabase, redact } = require('./database');

const LOCAL = '127.0.0.1';

function portSetting(env, name, fallback) {
  const raw = env[name];
  if (raw === undefined || raw === '') return { port: fallback, strict: false };
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new StartError(`${name} must be a TCP port (1-65535), got "${raw}"`);
  }
  return { port, strict: true };
}

async function choosePort(env, name, fallback) {
  const { port, strict } = portSetting(env, name, fallback);
  const got = await freePort(port);
  if (strict && got !== port) throw new StartError(`${name}=${port} is already in use on ${LOCAL}`);
  return got;
}

/** One npm start at a time owns .data/: a second one would stop the first one's servers. */
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

/** Validates the start script's own knobs up front, before a slow build. Returns the mode. */
function checkServiceSettings(env) {
  const mode = env.ALMANAC_START_SERVICES || 'auto';
  if (mode !== 'auto' && mode !== 'private') {
    throw new StartError(`ALMANAC_START_SERVICES must be auto or private, got "${mode}"`);
  }
  portSetting(env, 'ALMANAC_START_PG_PORT', 54329);
  portSetting(env, 'ALMANAC_START_REDIS_PORT', 63799);
  return mode;
}

async function resolveServices({ root, env }) {
  const mode = checkServiceSettings(env);
  const probeLocal = mode === 'auto';
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

  const stops = [];
  if (!plan.pg || !plan.redis) {
    const pgBins = plan.pg ? null : findPostgres();
    const redisBin = plan.redis ? null : findRedis();
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
    const dataRoot = path.join(root, '.data');
    fs.mkdirSync(dataRoot, { recursive: true });
    stops.push({ name: 'lock', sync: takeLock(dataRoot) });
    try {
      if (!plan.redis) {
        const pickPort = () => choosePort(env, 'ALMANAC_START_REDIS_PORT', 63799);
        const redis = await startPrivateRedis({ dataRoot, pickPort, bin: redisBin });
        stops.unshift({ name: 'redis', async: () => redis.stop(), sync: () => redis.stop({ sync: true }) });
        plan.redis = { url: redis.url, from: 'a private redis-server in .data/redis' };
      }
      if (!plan.pg) {
        const pickPort = () => choosePort(env, 'ALMANAC_START_PG_PORT', 54329);
        const pg = await startPrivatePostgres({ dataRoot, pickPort, bins: pgBins });
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
      while (stops.length) {
        const s = stops.shift();
        if (s.async) await s.async();
        else s.sync();
      }
    },
    stopSync() {
      stopAllSync(stops);
    },
  };
}

function stopAllSync(stops) {
  while (stops.length) {
    const s = stops.shift();
    try {
      s.sync();
    } catch (err) {
      process.stderr.write(`[almanac] stopping ${s.name} failed: ${err.message}\n`);
    }
  }
}

module.exports = { resolveServices, checkServiceSettings };
