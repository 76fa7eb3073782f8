// @ts-check
'use strict';
// The role processes of `npm run cluster`: one child per role instance, its own port, its log
// lines prefixed with its name, stopped with exactly one SIGTERM (Nest treats a second signal as
// "exit now" and would skip the drain).
const path = require('node:path');
const readline = require('node:readline');
const { spawn } = require('node:child_process');

const COLORS = [36, 33, 35, 32, 34, 91, 92, 93, 94, 95, 96];

/**
 * One role instance as planned: its name, role, preferred port and, for a worker, its pool.
 * @typedef {{ name: string, role: string, port: number, pool?: string }} InstancePlan
 */
/**
 * An instance ready to start: its plan with the port it got, and its environment.
 * @typedef {InstancePlan & { env: NodeJS.ProcessEnv }} InstanceSpec
 */
/**
 * A started instance; `exited` resolves once it has ended.
 * @typedef {object} Instance
 * @property {InstanceSpec} spec
 * @property {import('node:child_process').ChildProcess} child
 * @property {Promise<import('./app').ChildExit>} exited
 */

/**
 * Entry script of a role in the build output.
 * @param {string} root
 * @param {string} role
 * @returns {string}
 */
function roleEntry(root, role) {
  return path.join(root, 'dist/apps', role, 'src/main.js');
}

/**
 * A line writer that prefixes each line with the (padded, coloured on a terminal) instance name.
 * @param {string} name
 * @param {number} width
 * @param {number} color an ANSI foreground colour code
 * @param {NodeJS.WriteStream} stream
 * @returns {(line: string) => void}
 */
function prefixer(name, width, color, stream) {
  const tty = stream.isTTY;
  const label = name.padEnd(width);
  const prefix = tty ? `\x1b[${color}m${label} |\x1b[0m ` : `${label} | `;
  return (line) => stream.write(prefix + line + '\n');
}

/**
 * Starts one role instance. `spec` = {name, role, port, env}. Returns {spec, child, exited}
 * where `exited` resolves to {code, signal}.
 * @param {string} root
 * @param {InstanceSpec} spec
 * @param {number} index picks the log colour
 * @param {number} width the longest instance name, to align the log prefixes
 * @returns {Instance}
 */
function startInstance(root, spec, index, width) {
  const child = spawn(process.execPath, [roleEntry(root, spec.role)], {
    cwd: root,
    env: { ...spec.env, PORT: String(spec.port) },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Own process group: a terminal Ctrl-C reaches only this script, which forwards one SIGTERM.
    detached: true,
  });
  const color = COLORS[index % COLORS.length];
  readline.createInterface({ input: child.stdout }).on('line', prefixer(spec.name, width, color, process.stdout));
  readline.createInterface({ input: child.stderr }).on('line', prefixer(spec.name, width, color, process.stderr));
  /** @type {Promise<import('./app').ChildExit>} */
  const exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (err) => resolve({ code: 1, signal: null, error: err }));
  });
  return { spec, child, exited };
}

/** @param {Instance} inst */
const running = (inst) => inst.child.exitCode === null && inst.child.signalCode === null;

/**
 * SIGTERM to every live instance, SIGKILL to those still alive after graceMs.
 * @param {Instance[]} instances
 * @param {number} graceMs
 * @param {(inst: Instance) => void} onKill called before each SIGKILL
 * @returns {Promise<void>}
 */
async function stopAll(instances, graceMs, onKill) {
  const live = instances.filter(running);
  for (const inst of live) inst.child.kill('SIGTERM');
  const timer = setTimeout(() => {
    for (const inst of live.filter(running)) {
      onKill(inst);
      inst.child.kill('SIGKILL');
    }
  }, graceMs);
  await Promise.all(live.map((i) => i.exited));
  clearTimeout(timer);
}

/** @param {Instance[]} instances */
function killAllSync(instances) {
  for (const inst of instances.filter(running)) inst.child.kill('SIGKILL');
}

/**
 * Prometheus file_sd targets: one group per instance, labelled like the ServiceMonitor does.
 * @param {Instance[]} instances
 * @returns {{ targets: string[], labels: Record<string, string> }[]}
 */
function scrapeTargets(instances) {
  return instances.map(({ spec }) => ({
    targets: [`127.0.0.1:${spec.port}`],
    labels: {
      role: spec.role,
      instance_name: spec.name,
      ...(spec.pool ? { worker_pool: spec.pool } : {}),
    },
  }));
}

module.exports = { roleEntry, startInstance, stopAll, killAllSync, scrapeTargets };
