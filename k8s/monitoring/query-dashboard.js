#!/usr/bin/env node
'use strict';
// Runs every query of the Grafana dashboard against a Prometheus (the local one by default) and
// prints how many series each returns: the proof that the dashboard shows data for a running
// cluster. Exits 1 if Prometheus rejects a query (a PromQL error), not for empty results.
//   node k8s/monitoring/query-dashboard.js [http://127.0.0.1:9090]
const fs = require('node:fs');
const path = require('node:path');

const base = (process.argv[2] || 'http://127.0.0.1:9090').replace(/\/$/, '');
const dashboard = JSON.parse(fs.readFileSync(path.join(__dirname, 'almanac.dashboard.json'), 'utf8'));

async function query(expr) {
  const url = `${base}/api/v1/query?query=${encodeURIComponent(expr)}`;
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  const body = await res.json();
  if (body.status !== 'success') throw new Error(`${body.errorType}: ${body.error}`);
  return body.data.result;
}

async function main() {
  let failed = 0;
  let withData = 0;
  let total = 0;
  for (const panel of dashboard.panels) {
    for (const target of panel.targets || []) {
      // Grafana fills $__rate_interval in; at a 5 s scrape interval one minute is plenty.
      const expr = target.expr.replace(/\$__rate_interval|\$__interval|\$__range/g, '1m');
      total += 1;
      try {
        const result = await query(expr);
        if (result.length) withData += 1;
        const sample = result[0] ? ` e.g. ${JSON.stringify(result[0].metric)} = ${result[0].value[1]}` : '';
        process.stdout.write(`${result.length ? 'data ' : 'empty'}  ${panel.title} [${target.refId}]: ${result.length} series${sample}\n`);
      } catch (err) {
        failed += 1;
        process.stdout.write(`ERROR  ${panel.title} [${target.refId}]: ${err.message}\n`);
      }
    }
  }
  process.stdout.write(`\n${withData} of ${total} queries returned data, ${failed} failed\n`);
  process.exitCode = failed ? 1 : 0;
}

main().catch((err) => {
  process.stderr.write(`query-dashboard: ${err.message} (is Prometheus running at ${base}?)\n`);
  process.exit(1);
});
