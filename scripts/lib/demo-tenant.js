// @ts-check
'use strict';
// A demo tenant so a newcomer can curl at once. Its key is kept in .data/demo-tenant.json and
// reused while the API still accepts it (the key is shown once by the API and stored hashed).
const fs = require('node:fs');
const path = require('node:path');

/**
 * What .data/demo-tenant.json holds.
 * @typedef {{ tenantId: number, name: string, apiKey: string }} SavedDemo
 */
/** @typedef {SavedDemo & { reused: boolean }} DemoTenant */
/**
 * POST /v1/admin/tenants's 201 body (apps/api CreatedTenantDto), as far as read here; apiKey is checked.
 * @typedef {{ id: number, apiKey?: unknown }} TenantCreated
 */

/**
 * @param {string} baseUrl
 * @param {string} apiKey
 * @returns {Promise<boolean>}
 */
async function keyStillWorks(baseUrl, apiKey) {
  try {
    const res = await fetch(`${baseUrl}/v1/jobs?limit=1`, {
      headers: { authorization: `Bearer ${apiKey}` },
      signal: AbortSignal.timeout(5000),
    });
    return res.status === 200;
  } catch {
    return false;
  }
}

/**
 * @param {string} baseUrl
 * @param {string} adminToken
 * @param {string} name
 * @returns {Promise<{ status: number, body: unknown }>} body: the parsed JSON, null when not JSON
 */
async function createTenant(baseUrl, adminToken, name) {
  const res = await fetch(`${baseUrl}/v1/admin/tenants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = await res.json().catch(() => null);
  return { status: res.status, body };
}

/**
 * Resolves to {apiKey, tenantId, name, reused}; an unexpected answer from the API throws.
 * @param {{ baseUrl: string, adminToken: string, dataRoot: string }} options
 * @returns {Promise<DemoTenant>}
 */
async function demoTenant({ baseUrl, adminToken, dataRoot }) {
  const file = path.join(dataRoot, 'demo-tenant.json');
  try {
    // Written by an earlier run (below); reused only while the API still accepts its key.
    // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- JSON.parse is any; the JSDoc cast types it
    const saved = /** @type {SavedDemo} */ (JSON.parse(fs.readFileSync(file, 'utf8')));
    if (saved.apiKey && (await keyStillWorks(baseUrl, saved.apiKey))) return { ...saved, reused: true };
  } catch {
    // nothing saved yet, or unreadable: make a new one
  }
  let name = 'demo';
  let res = await createTenant(baseUrl, adminToken, name);
  if (res.status === 409) {
    name = `demo-${new Date().toISOString().slice(0, 19).replace(/[-:T]/g, '')}`;
    res = await createTenant(baseUrl, adminToken, name);
  }
  const created = /** @type {TenantCreated | null} */ (res.body);
  if (res.status !== 201 || !created || typeof created.apiKey !== 'string') {
    throw new Error(`POST /v1/admin/tenants answered ${res.status}: ${JSON.stringify(res.body)}`);
  }
  /** @type {SavedDemo} */
  const demo = { tenantId: created.id, name, apiKey: created.apiKey };
  fs.mkdirSync(dataRoot, { recursive: true });
  fs.writeFileSync(file, JSON.stringify(demo, null, 2), { mode: 0o600 });
  return { ...demo, reused: false };
}

/**
 * The curl lines printed after start: post a job due now (it runs at once), then ask whether it
 * ran. The key carries the start time so pasting a later run's lines never collides (409).
 * @param {string} baseUrl
 * @param {string} apiKey
 * @returns {string[]}
 */
function curlTour(baseUrl, apiKey, now = new Date()) {
  const runAt = now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  const key = `hello:${runAt.replace(/[-:]/g, '').replace('Z', '')}`;
  return [
    `export ALMANAC_KEY=${apiKey}`,
    `curl -s ${baseUrl}/v1/jobs -H "Authorization: Bearer $ALMANAC_KEY" -H 'Content-Type: application/json' \\`,
    `  -d '{"kind":"noop","key":"${key}","runAt":"${runAt}"}'`,
    `curl -s '${baseUrl}/v1/jobs?key=${key}' -H "Authorization: Bearer $ALMANAC_KEY"`,
  ];
}

module.exports = { demoTenant, curlTour };
