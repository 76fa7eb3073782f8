// @ts-check
'use strict';
// A probe preloaded into every role process a bench starts (they inherit NODE_OPTIONS), for
// finding where per-job cost goes. `--cpu-prof` is not allowed in NODE_OPTIONS, so the CPU
// profile is taken through the inspector instead.
//
//   ALMANAC_PROBE=calls ALMANAC_PROBE_DIR=/tmp/probe NODE_OPTIONS="--require $PWD/bench/lib/role-probe.cjs" \
//     node -r ./bench/lib/register.cjs bench/stream.ts --rates 500 --seconds 20 --runs 1
//   node -r ./bench/lib/register.cjs bench/probe-summary.ts /tmp/probe [--from 13 --to 32]
//
// calls: counts each Redis command (EVALSHA by the script's sha) and each Postgres statement (by
// its prepared name or first 60 characters) per role; cpu: a sampling CPU profile per role.
// Each role writes `<role>-<pid>.calls.json` / `.cpuprofile` into ALMANAC_PROBE_DIR when it
// exits or gets SIGTERM. Processes that are not roles (the bench, plain BullMQ) are left alone.
const fs = require('node:fs');
const path = require('node:path');

const role = /dist\/apps\/([a-z-]+)\//.exec(process.argv[1] ?? '')?.[1];
const mode = process.env.ALMANAC_PROBE;
const dir = process.env.ALMANAC_PROBE_DIR ?? '/tmp';
if (role && (mode === 'calls' || mode === 'cpu')) {
  const out = (ext) => path.join(dir, `${role}-${process.pid}.${ext}`);
  let write = () => undefined;
  if (mode === 'calls') {
    /** @type {Record<string, number>} */
    const counts = {};
    const count = (k) => void (counts[k] = (counts[k] ?? 0) + 1);
    // The role's own copies: resolved from its entry point, as its own require would.
    const from = { paths: [path.dirname(process.argv[1])] };
    const Redis = require(require.resolve('ioredis', from)).default;
    const send = Redis.prototype.sendCommand;
    Redis.prototype.sendCommand = function (cmd, ...rest) {
      count(`redis ${cmd.name}${cmd.name === 'evalsha' ? ` ${String(cmd.args[0]).slice(0, 8)}` : ''}`);
      return send.call(this, cmd, ...rest);
    };
    const { Client } = require(require.resolve('pg', from));
    const query = Client.prototype.query;
    Client.prototype.query = function (config, ...rest) {
      const text = typeof config === 'string' ? config : (config?.name ?? config?.text ?? '?');
      count(`pg ${String(text).replace(/\s+/g, ' ').slice(0, 60)}`);
      return query.call(this, config, ...rest);
    };
    const startedAt = Date.now();
    write = () => fs.writeFileSync(out('calls.json'), JSON.stringify({ role, ms: Date.now() - startedAt, counts }, null, 1));
  } else {
    const inspector = require('node:inspector');
    const session = new inspector.Session();
    session.connect();
    session.post('Profiler.enable');
    session.post('Profiler.start');
    // Same-thread inspector calls answer synchronously, so this works from an exit handler.
    write = () => session.post('Profiler.stop', (err, res) => err || fs.writeFileSync(out('cpuprofile'), JSON.stringify(res.profile)));
  }
  let written = false;
  const once = () => void (written || ((written = true), write()));
  process.on('exit', once);
  process.prependListener('SIGTERM', once);
}
