'use strict';
// Postgres chores before the app boots: find a user the local server trusts, create the database.
const os = require('node:os');
const { StartError } = require('./log');

function pgClient(connectionString) {
  // Loaded lazily: `pg` comes from node_modules, which ensureBuilt has checked.
  const { Client } = require('pg');
  return new Client({ connectionString, connectionTimeoutMillis: 5000 });
}

async function tryQuery(url, sql, params) {
  const client = pgClient(url);
  await client.connect();
  try {
    return await client.query(sql, params);
  } finally {
    await client.end();
  }
}

/** The first of postgres, root and the OS user that the server at host:port lets in without a password. */
async function localSuperuser(host, port) {
  const candidates = [...new Set(['postgres', 'root', os.userInfo().username])];
  const errors = [];
  for (const user of candidates) {
    try {
      await tryQuery(`postgres://${user}@${host}:${port}/postgres`, 'SELECT 1');
      return user;
    } catch (err) {
      errors.push(`${user}: ${err.message}`);
    }
  }
  throw new StartError(
    `Postgres answers on ${host}:${port} but lets none of ${candidates.join(', ')} in without a password\n` +
    `  (${errors.join('; ')}).\n` +
    `  Set DATABASE_URL=postgres://USER:PASSWORD@${host}:${port}/almanac, or ALMANAC_START_SERVICES=private.`);
}

/** Creates the database named in the URL when the server says it does not exist (3D000). */
async function ensureDatabase(url) {
  try {
    await tryQuery(url, 'SELECT 1');
    return false;
  } catch (err) {
    if (err.code !== '3D000') {
      throw new StartError(`cannot connect to Postgres at ${redact(url)}: ${err.message}`);
    }
  }
  const parsed = new URL(url);
  const name = decodeURIComponent(parsed.pathname.slice(1));
  parsed.pathname = '/postgres';
  try {
    await tryQuery(parsed.toString(), `CREATE DATABASE "${name.replace(/"/g, '""')}"`);
  } catch (err) {
    if (err.code !== '42P04') throw new StartError(`cannot create database ${name}: ${err.message}`);
  }
  return true;
}

function redact(url) {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable url)';
  }
}

module.exports = { localSuperuser, ensureDatabase, redact };
