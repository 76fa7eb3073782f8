'use strict';
// Runs the all-in-one app (api, promoter, dispatcher and worker in one process) as a child.
const path = require('node:path');
const { spawn } = require('node:child_process');
const { ENTRY } = require('./build');

const READY_TIMEOUT_MS = 120_000;

/**
 * The app gets its own process group so a Ctrl-C reaches only this script, which forwards exactly
 * one signal: Nest's shutdown hook treats a second signal as "die now" and would skip draining.
 */
function spawnApp(root, env) {
  const child = spawn(process.execPath, [path.join(root, ENTRY)], {
    cwd: root,
    env,
    stdio: ['ignore', 'inherit', 'inherit'],
    detached: true,
  });
  const exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (err) => resolve({ code: 1, signal: null, error: err }));
  });
  return { child, exited };
}

/** Polls /health/ready until it answers 200; rejects if the app exits first or time runs out. */
async function waitReady(baseUrl, exited) {
  let gone = null;
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
      last = err.cause?.code ?? err.message;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`the app was not ready after ${READY_TIMEOUT_MS / 1000} s (last /health/ready: ${last})`);
}

module.exports = { spawnApp, waitReady };
