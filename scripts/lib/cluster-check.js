// @ts-check
'use strict';
// `npm run cluster -- --check`: proves the split deployment works end to end. Every instance
// serves /metrics; a job posted to the api is promoted or dispatched by the other processes and
// finishes on a worker, with no role sharing a process.

const TIMEOUT_MS = 60_000;

// The parts of the API's answers read here (apps/api: CreatedTenantDto, JobDto).
/** @typedef {{ id: number, apiKey: string }} TenantCreated */
/** @typedef {{ id: string, state: string }} JobView */

/**
 * @param {string} url
 * @param {RequestInit} [init]
 * @returns {Promise<{ status: number, body: unknown }>} body: the parsed JSON, null when not JSON
 */
async function json(url, init = {}) {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
  const body = await res.json().catch(() => null);
  return { status: res.status, body };
}

/**
 * Every instance must serve almanac_ metrics on /metrics.
 * @param {import('./cluster-processes').Instance[]} instances
 * @returns {Promise<void>}
 */
async function checkMetrics(instances) {
  /** @type {string[]} */
  const missing = [];
  for (const { spec } of instances) {
    const res = await fetch(`http://127.0.0.1:${spec.port}/metrics`, { signal: AbortSignal.timeout(10_000) });
    const text = await res.text();
    if (res.status !== 200 || !/^# TYPE almanac_/m.test(text)) missing.push(`${spec.name} (HTTP ${res.status})`);
  }
  if (missing.length) throw new Error(`no almanac_ metrics from: ${missing.join(', ')}`);
}

/**
 * Creates a tenant, posts a noop job due now, and waits until a worker has run it.
 * @param {string} apiUrl
 * @param {string} adminToken
 * @param {(line: string) => void} say
 * @returns {Promise<void>}
 */
async function roundTrip(apiUrl, adminToken, say) {
  const tenant = await json(`${apiUrl}/v1/admin/tenants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: `cluster-check-${Date.now()}` }),
  });
  if (tenant.status !== 201) throw new Error(`POST /v1/admin/tenants answered ${tenant.status}: ${JSON.stringify(tenant.body)}`);
  const created = /** @type {TenantCreated} */ (tenant.body);
  const headers = { authorization: `Bearer ${created.apiKey}`, 'content-type': 'application/json' };
  const key = `cluster-check:${Date.now()}`;
  const job = await json(`${apiUrl}/v1/jobs`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ kind: 'noop', key, runAt: new Date().toISOString() }),
  });
  if (job.status !== 201) throw new Error(`POST /v1/jobs answered ${job.status}: ${JSON.stringify(job.body)}`);
  const posted = /** @type {JobView} */ (job.body);
  const deadline = Date.now() + TIMEOUT_MS;
  /** @type {string | null} */
  let state = posted.state;
  while (Date.now() < deadline) {
    const got = await json(`${apiUrl}/v1/jobs/${posted.id}`, { headers });
    const view = /** @type {JobView | null} */ (got.body);
    state = view && view.state;
    if (state === 'succeeded') {
      say(`check: job ${posted.id} (${key}) ran on a worker and succeeded`);
      return;
    }
    if (state === 'dead' || state === 'cancelled') throw new Error(`job ${posted.id} ended ${state}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`job ${posted.id} was still ${state} after ${TIMEOUT_MS / 1000} s`);
}

module.exports = { checkMetrics, roundTrip };
