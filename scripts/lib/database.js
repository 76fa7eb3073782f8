// @ts-check
'use strict';
// Postgres chores before the app boots: find a user the local server trusts, create the database.
const os = require('node:os');
const { StartError, errorMessage } = require('./log');

/**
 * The SQLSTATE of a Postgres error (a pg DatabaseError carries it as `code`), else undefined.
 * @param {unknown} err
 * @returns {unknown}
 */
function sqlState(err) {
  return typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
}

/**
 * @param {string} connectionString
 * @returns {import('pg').Client}
 */
function pgClient(connectionString) {
  // Loaded lazily: `pg` comes from node_modules, which ensureBuilt has checked.
  const { Client } = require('pg');
  return new Client({ connectionString, connectionTimeoutMillis: 5000 });
}

/**
 * Runs one statement on a connection of its own.
 * @param {string} url
 * @param {string} sql
 * @param {unknown[]} [params]
 * @returns {Promise<import('pg').QueryResult>}
 */
async function tryQuery(url, sql, params) {
  const client = pgClient(url);
  await client.connect();
  try {
    return await client.query(sql, params);
  } finally {
    await client.end();
  }
}

/**
 * The first of postgres, root and the OS user that the server at host:port lets in without a password.
 * @param {string} host
 * @param {number} port
 * @returns {Promise<string>}
 */
async function localSuperuser(host, port) {
  const candidates = [...new Set(['postgres', 'root', os.userInfo().username])];
  /** @type {string[]} */
  const errors = [];
  for (const user of candidates) {
    try {
      await tryQuery(`postgres://${user}@${host}:${port}/postgres`, 'SELECT 1');
      return user;
    } catch (err) {
      errors.push(`${user}: ${errorMessage(err)}`);
    }
  }
  throw new StartError(
    `Postgres answers on ${host}:${port} but lets none of ${candidates.join(', ')} in without a password\n` +
    `  (${errors.join('; ')}).\n` +
    `  Set DATABASE_URL=postgres://USER:PASSWORD@${host}:${port}/almanac, or ALMANAC_START_SERVICES=private.`);
}

/**
 * Creates the database named in the URL when the server says it does not exist (3D000).
 * @param {string} url
 * @returns {Promise<boolean>} true when it had to be created
 */
async function ensureDatabase(url) {
  try {
    await tryQuery(url, 'SELECT 1');
    return false;
  } catch (err) {
    if (sqlState(err) !== '3D000') {
      throw new StartError(`cannot connect to Postgres at ${redact(url)}: ${errorMessage(err)}`);
    }
  }
  const parsed = new URL(url);
  const name = decodeURIComponent(parsed.pathname.slice(1));
  parsed.pathname = '/postgres';
  try {
    await tryQuery(parsed.toString(), `CREATE DATABASE "${name.replace(/"/g, '""')}"`);
  } catch (err) {
    if (sqlState(err) !== '42P04') throw new StartError(`cannot create database ${name}: ${errorMessage(err)}`);
  }
  return true;
}

/**
 * The URL with its password masked, for logs.
 * @param {string} url
 * @returns {string}
 */
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
