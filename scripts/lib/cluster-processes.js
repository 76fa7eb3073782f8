'use strict';
// The role processes of `npm run cluster`: one child per role instance, its own port, its log
// lines prefixed with its name, stopped with exactly one SIGTERM (Nest treats a second signal as
// "exit now" and would skip the drain).
const path = require('node:path');
const readline = require('node:readline');
const { spawn } = require('node:child_process');

const COLORS = [36, 33, 35, 32, 34, 91, 92, 93, 94, 95, 96];

/** Entry script of a role in the build output. */
function roleEntry(root, role) {
  return path.join(root, 'dist/apps', role, 'src/main.js');
}

function prefixer(name, width, color, stream) {
  const tty = stream.isTTY;
  const label = name.padEnd(width);
  const prefix = tty ? `\x1b[${color}m${label} |\x1b[0m ` : `${label} | `;
  return (line) => stream.write(prefix + line + '\n');
}

/**
 * Starts one role instance. `spec` = {name, role, port, env}. Returns {spec, child, exited}
 * where `exited` resolves to {code, signal}.
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
  const exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (err) => resolve({ code: 1, signal: null, error: err }));
  });
  return { spec, child, exited };
}

const running = (inst) => inst.child.exitCode === null && inst.child.signalCode === null;

/** SIGTERM to every live instance, SIGKILL to those still alive after graceMs. */
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

function killAllSync(instances) {
  for (const inst of instances.filter(running)) inst.child.kill('SIGKILL');
}

/** Prometheus file_sd targets: one group per instance, labelled like the ServiceMonitor does. */
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
