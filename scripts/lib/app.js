// @ts-check
'use strict';
// Runs the all-in-one app (api, promoter, dispatcher and worker in one process) as a child.
const path = require('node:path');
const { spawn } = require('node:child_process');
const { ENTRY } = require('./build');
const { errorMessage } = require('./log');

const READY_TIMEOUT_MS = 120_000;

/**
 * How a child process ended: its exit code or signal, or (code 1) the error that kept it from starting.
 * @typedef {{ code: number | null, signal: NodeJS.Signals | null, error?: Error }} ChildExit
 */
/** @typedef {{ child: import('node:child_process').ChildProcess, exited: Promise<ChildExit> }} AppProcess */

/**
 * The app gets its own process group so a Ctrl-C reaches only this script, which forwards exactly
 * one signal: Nest's shutdown hook treats a second signal as "die now" and would skip draining.
 * @param {string} root
 * @param {NodeJS.ProcessEnv} env
 * @returns {AppProcess}
 */
function spawnApp(root, env) {
  const child = spawn(process.execPath, [path.join(root, ENTRY)], {
    cwd: root,
    env,
    stdio: ['ignore', 'inherit', 'inherit'],
    detached: true,
  });
  /** @type {Promise<ChildExit>} */
  const exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (err) => resolve({ code: 1, signal: null, error: err }));
  });
  return { child, exited };
}

/**
 * Polls /health/ready until it answers 200; rejects if the app exits first or time runs out.
 * @param {string} baseUrl
 * @param {Promise<ChildExit>} exited
 * @returns {Promise<void>}
 */
async function waitReady(baseUrl, exited) {
  // The cast stops tsc narrowing `gone` to null for good: it does not see the callback assign it.
  let gone = /** @type {ChildExit | null} */ (null);
  void exited.then((e) => {
    gone = e;
  });
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (gone) {
      throw new Error(`the app exited before it was ready (${gone.signal ? `signal ${gone.signal}` : `code ${gone.code}`})`);
    }
    try {
      const res = await fetch(`${baseUrl}/health/ready`, { signal: AbortSignal.timeout(2000) });
      if (res.status === 200) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      // fetch fails with a TypeError whose cause names the socket error (ECONNREFUSED, ...).
      last = causeCode(err) ?? errorMessage(err);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`the app was not ready after ${READY_TIMEOUT_MS / 1000} s (last /health/ready: ${last})`);
}

/**
 * The code of err.cause (e.g. ECONNREFUSED under fetch's "fetch failed"), if there is one.
 * @param {unknown} err
 * @returns {string | undefined}
 */
function causeCode(err) {
  const cause = err instanceof Error ? err.cause : undefined;
  return typeof cause === 'object' && cause !== null && 'code' in cause && typeof cause.code === 'string'
    ? cause.code
    : undefined;
}

module.exports = { spawnApp, waitReady };
