import { Clock } from '@almanac/platform';
import { ADMIN_TOKEN, type ApiHarness, DAY, HOUR, inMs, startApi } from './api-harness';

/** The console over HTTP: sign-in, tenant scoping, escaping, actions and their guards. */
describe('console (/console)', () => {
  let h: ApiHarness;
  let acme: { id: number; apiKey: string };
  let globex: { id: number; apiKey: string };

  beforeAll(async () => {
    h = await startApi();
    acme = await h.createTenant('acme');
    globex = await h.createTenant('globex');
  });
  afterAll(() => h.close());

  const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });
  const create = async (key: string, runAt: string, apiKey = acme.apiKey) =>
    (await h.http().post('/v1/jobs').set(bearer(apiKey)).send({ kind: 'noop', key, runAt, payload: { note: key } }).expect(201)).body as { id: string };

  /** Signs in through the form and returns the session cookie as the browser would send it. */
  async function signIn(token: string): Promise<string> {
    const res = await h.http().post('/console/sign-in').type('form').send({ token }).expect(303);
    const cookie = String(res.headers['set-cookie']);
    return cookie.split(';')[0];
  }

  it('refuses a body larger than a form before reading it, signed in or not, in any content type', async () => {
    const big = 'x'.repeat(64 * 1024);
    await h.http().post('/console/sign-in').type('form').send({ token: big }).expect(413);
    await h.http().post('/console/jobs/1/retry').type('json').send({ note: big }).expect(413);
    await h.http().post('/%63onsole/jobs/1/retry').type('json').send({ note: big }).expect(413); // the router decodes it
    await h.http().post('/console/sign-in').type('form').send({ token: 'alm_nope' }).expect(401); // a form still is one
  });

  it('sends a visitor without a session to sign in, and refuses a wrong secret without a cookie', async () => {
    const home = await h.http().get('/console').expect(303);
    expect(home.headers.location).toBe('/console/sign-in');
    const form = await h.http().get('/console/sign-in').expect(200);
    expect(form.text).toContain('name="token"');
    const wrong = await h.http().post('/console/sign-in').type('form').send({ token: 'alm_nope' }).expect(401);
    expect(wrong.text).toContain('neither a tenant API key nor the admin token');
    expect(wrong.headers['set-cookie']).toBeUndefined();
  });

  it('keeps the key in an HttpOnly, SameSite=Lax, Secure cookie scoped to /console, and never writes it into a page', async () => {
    const res = await h.http().post('/console/sign-in').type('form').send({ token: acme.apiKey }).expect(303);
    expect(res.headers.location).toBe('/console');
    const cookie = String(res.headers['set-cookie']);
    expect(cookie).toMatch(/^almanac_console=alm_/);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Lax');
    expect(cookie).toContain('; Secure'); // over http://127.0.0.1 too: only the setting turns it off
    expect(cookie).toContain('Path=/console');
    // A proxy that does not pass the browser's Host on sends its own, often a loopback name.
    for (const host of ['localhost', 'localhost:3000', '127.0.0.1', '[::1]:3000']) {
      const behind = await h.http().post('/console/sign-in').set('Host', host).type('form').send({ token: acme.apiKey }).expect(303);
      expect(String(behind.headers['set-cookie'])).toContain('; Secure');
      const out = await h.http().post('/console/sign-out').set('Host', host).set('Cookie', cookie.split(';')[0]).expect(303);
      expect(String(out.headers['set-cookie'])).toContain('; Secure');
    }
    const page = await h.http().get('/console').set('Cookie', cookie.split(';')[0]).expect(200);
    expect(page.text).not.toContain(acme.apiKey);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['cache-control']).toBe('no-store');
  });

  it('shows the overview from the tenant\'s own rows: due soon, states, dead jobs', async () => {
    const cookie = await signIn(acme.apiKey);
    await create('ov-soon-1', inMs(10 * 60_000));
    await create('ov-soon-2', inMs(20 * 60_000));
    await create('ov-later', inMs(3 * HOUR));
    const dead = await create('ov-dead', inMs(-HOUR));
    await h.db.dataSource.query(`UPDATE jobs SET state = 'x', finished_at = now() WHERE id = $1`, [dead.id]);
    const page = await h.http().get('/console').set('Cookie', cookie).expect(200);
    const stat = (label: string) => new RegExp(`${label}</span><(?:span|a)[^>]*class="value"[^>]*>([0-9,+]+)`).exec(page.text)?.[1];
    expect(stat('due in the next hour')).toBe('2');
    expect(stat('due in the next day')).toBe('3');
    expect(stat('dead')).toBe('1');
    expect(stat('queued')).toBe('0');
    expect(page.text).toContain('ov-dead');
    expect(page.text).toContain('<svg class="spark"');
  });

  it('escapes the tenant\'s text: a payload, an error and a tenant name are shown, never run', async () => {
    const evil = '<img src=x onerror=alert(1)>';
    const cookie = await signIn(acme.apiKey);
    const { id } = (await h.http().post('/v1/jobs').set(bearer(acme.apiKey)).send({ kind: 'noop', key: 'xss-1', runAt: inMs(-HOUR), payload: { note: evil } }).expect(201)).body as { id: string };
    await h.db.dataSource.query(`UPDATE jobs SET state = 'x', attempts = 1, last_error = $2, progress = $3 WHERE id = $1`, [
      id,
      evil,
      JSON.stringify({ percent: 40, note: evil, attempt: 1, at: new Date().toISOString() }),
    ]);
    await h.db.dataSource.query(`INSERT INTO job_attempts (job_id, tenant_id, attempt, started_at, finished_at, outcome, error) VALUES ($1, $2, 1, now(), now(), 'failed', $3)`, [id, acme.id, evil]);
    const one = await h.http().get(`/console/jobs/${id}`).set('Cookie', cookie).expect(200);
    expect(one.text).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(one.text).toContain('<meter min="0" max="100" value="40"></meter> 40 % · &lt;img'); // the handler's progress note, escaped too
    expect(one.text).not.toContain(evil);
    const named = (await h.http().post('/v1/admin/tenants').set(bearer(ADMIN_TOKEN)).send({ name: evil }).expect(201)).body as { id: number };
    const admin = await signIn(ADMIN_TOKEN);
    const tenants = await h.http().get('/console/tenants').set('Cookie', admin).expect(200);
    expect(tenants.text).not.toContain(evil);
    const theirs = await h.http().get('/console/jobs').query({ tenant: String(named.id) }).set('Cookie', admin).expect(200);
    expect(theirs.text).not.toContain(evil);
  });

  it("shows a job's newest attempts and links to older pages of them", async () => {
    const cookie = await signIn(acme.apiKey);
    const { id } = await create('many-attempts', inMs(-HOUR));
    await h.db.dataSource.query(`UPDATE jobs SET state = 'x', attempts = 45, max_attempts = 45 WHERE id = $1`, [id]);
    await h.db.dataSource.query(
      `INSERT INTO job_attempts (job_id, tenant_id, attempt, started_at, finished_at, outcome, error)
       SELECT $1, $2, n, now() - (50 - n) * interval '1 minute', now() - (50 - n) * interval '1 minute', 'failed', 'boom #' || n FROM generate_series(1, 45) n`,
      [id, acme.id],
    );
    const newest = await h.http().get(`/console/jobs/${id}`).set('Cookie', cookie).expect(200);
    expect(newest.text).toContain('boom #45');
    expect(newest.text).toContain('boom #26');
    expect(newest.text).not.toContain('boom #25<');
    const older = /href="([^"]*attempts=26)"/.exec(newest.text)?.[1];
    expect(older).toBe(`/console/jobs/${id}?attempts=26`);
    const page = await h.http().get(older!).set('Cookie', cookie).expect(200);
    expect(page.text).toContain('boom #25');
    expect(page.text).toContain('boom #6<');
    expect(page.text).not.toContain('boom #26');
    expect(page.text).toContain(`href="/console/jobs/${id}?attempts=6"`);
    expect(page.text).toContain(`href="/console/jobs/${id}">Newest attempts`);
    const bad = await h.http().get(`/console/jobs/${id}?attempts=nonsense`).set('Cookie', cookie).expect(400);
    expect(bad.text).toContain('attempts is not a page of attempts this console linked to');
    expect(bad.text).not.toContain('cursor'); // not in this URL
  });

  it('finds a job by key, shows another tenant\'s job as not found, and names a bad filter', async () => {
    const cookie = await signIn(acme.apiKey);
    const { id } = await create('find-me', inMs(2 * DAY));
    const found = await h.http().get('/console/jobs').query({ key: 'find-me' }).set('Cookie', cookie).expect(303);
    expect(found.headers.location).toBe(`/console/jobs/${id}`);
    const theirs = await create('theirs', inMs(2 * DAY), globex.apiKey);
    const other = await h.http().get(`/console/jobs/${theirs.id}`).set('Cookie', cookie).expect(404);
    expect(other.text).not.toContain('theirs');
    await h.http().get('/console/jobs').query({ key: 'no-such-key' }).set('Cookie', cookie).expect(404);
    const bad = await h.http().get('/console/jobs').query({ state: 'exploded' }).set('Cookie', cookie).expect(400);
    expect(bad.text).toContain('state must be one of');
  });

  it('cancels, reschedules and retries through the API\'s rules, and refuses a post from another site', async () => {
    const cookie = await signIn(acme.apiKey);
    const job = await create('act-1', inMs(2 * DAY));
    const refused = await h.http().post(`/console/jobs/${job.id}/cancel`).set('Cookie', cookie).set('Origin', 'https://evil.example').type('form').send({}).expect(403);
    expect(refused.text).toContain('another site');
    await h.http().post(`/console/jobs/${job.id}/cancel`).set('Cookie', cookie).set('Sec-Fetch-Site', 'cross-site').type('form').send({}).expect(403);
    // X-Forwarded-Host counts only from a proxy ALMANAC_TRUST_PROXY names (none here).
    await h.http().post(`/console/jobs/${job.id}/cancel`).set('Cookie', cookie).set('Origin', 'https://evil.example').set('X-Forwarded-Host', 'evil.example').type('form').send({}).expect(403);
    const moved = await h.http().post(`/console/jobs/${job.id}/reschedule`).set('Cookie', cookie).type('form').send({ runAt: '2031-01-02T03:04' }).expect(303);
    expect(moved.headers.location).toBe(`/console/jobs/${job.id}?done=rescheduled`);
    const bad = await h.http().post(`/console/jobs/${job.id}/reschedule`).set('Cookie', cookie).type('form').send({ runAt: 'tomorrow-ish' }).expect(400);
    expect(bad.text).toContain('runAt');
    const cancelled = await h.http().post(`/console/jobs/${job.id}/cancel`).set('Cookie', cookie).type('form').send({}).expect(303);
    const after = await h.http().get(cancelled.headers.location).set('Cookie', cookie).expect(200);
    expect(after.text).toContain('Job cancelled.');
    const api = await h.http().get(`/v1/jobs/${job.id}`).set(bearer(acme.apiKey)).expect(200);
    expect(api.body).toMatchObject({ state: 'cancelled', runAt: '2031-01-02T03:04:00.000Z' });
    await h.http().post(`/console/jobs/${job.id}/cancel`).set('Cookie', cookie).type('form').send({}).expect(303); // already cancelled: same answer as the API
    const again = await h.http().post(`/console/jobs/${job.id}/retry`).set('Cookie', cookie).type('form').send({}).expect(409);
    expect(again.text).toContain('only dead jobs can be retried');
  });

  it('lets the operator list tenants and look at any one; a tenant cannot', async () => {
    const admin = await signIn(ADMIN_TOKEN);
    const tenants = await h.http().get('/console/tenants').set('Cookie', admin).expect(200);
    expect(tenants.text).toContain('acme');
    expect(tenants.text).toContain('globex');
    await create('globex-only', inMs(2 * DAY), globex.apiKey);
    const jobs = await h.http().get('/console/jobs').query({ tenant: String(globex.id), state: 'scheduled' }).set('Cookie', admin).expect(200);
    expect(jobs.text).toContain('globex-only');
    expect(jobs.text).toContain(`name="tenant" value="${globex.id}"`);
    await h.http().get('/console/jobs').query({ tenant: '999999' }).set('Cookie', admin).expect(404);
    const tenant = await signIn(globex.apiKey);
    await h.http().get('/console/tenants').set('Cookie', tenant).expect(404);
    // A tenant's `tenant=` parameter is ignored: its key decides.
    const own = await h.http().get('/console/jobs').query({ tenant: String(acme.id), state: 'scheduled' }).set('Cookie', tenant).expect(200);
    expect(own.text).toContain('globex-only');
    expect(own.text).not.toContain('find-me');
  });

  it("counts each tenant's jobs on the operator's list up to 10,000, a bigger tenant shown as 10,000+", async () => {
    const big = await h.createTenant('big-tenant');
    const full = await h.createTenant('full-tenant');
    const fill = (tenantId: number, n: number) =>
      h.db.dataSource.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state) SELECT $1, 'bulk-' || g, 'noop', now() + interval '2 days', 's' FROM generate_series(1, $2) g`, [tenantId, n]);
    await fill(big.id, 10_001);
    await fill(full.id, 10_000);
    const admin = await signIn(ADMIN_TOKEN);
    const tenants = await h.http().get('/console/tenants').set('Cookie', admin).expect(200);
    const jobsOf = (id: number) => new RegExp(`<td class="num">${id}</td>[\\s\\S]*?<td class="num">([0-9,+]+)</td>\\s*</tr>`).exec(tenants.text)?.[1];
    expect(jobsOf(big.id)).toBe('10,000+');
    expect(jobsOf(full.id)).toBe('10,000');
    await h.db.dataSource.query('DELETE FROM jobs WHERE tenant_id IN ($1, $2)', [big.id, full.id]);
  });

  it('shows schedules\' next runs in their own zone, and pauses one', async () => {
    const cookie = await signIn(acme.apiKey);
    const s = await h.http().post('/v1/schedules').set(bearer(acme.apiKey))
      .send({ key: 'nightly', kind: 'noop', cron: '30 2 * * *', timezone: 'America/New_York', payload: {} }).expect(201);
    const page = await h.http().get('/console/schedules').set('Cookie', cookie).expect(200);
    expect(page.text).toContain('America/New_York');
    expect(page.text).toMatch(/02:30/);
    await h.http().post(`/console/schedules/${s.body.id}/pause`).set('Cookie', cookie).type('form').send({}).expect(303);
    const api = await h.http().get(`/v1/schedules/${s.body.id}`).set(bearer(acme.apiKey)).expect(200);
    expect(api.body.paused).toBe(true);
  });

  it('pauses and resumes a schedule from a later page of the list and comes back to that page', async () => {
    const t = await h.createTenant('many-schedules');
    await h.db.dataSource.query(
      `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, next_run_at) SELECT $1, 'sched-' || lpad(g::text, 2, '0'), 'noop', '0 * * * *', 'UTC', now() + interval '1 hour' FROM generate_series(1, 52) g`,
      [t.id],
    );
    const cookie = await signIn(t.apiKey);
    const first = await h.http().get('/console/schedules').set('Cookie', cookie).expect(200);
    const cursor = /href="\/console\/schedules\?cursor=([A-Za-z0-9_-]+)" rel="next"/.exec(first.text)?.[1] as string;
    expect(cursor).toBeDefined();
    expect(first.text).not.toContain('name="cursor"'); // the first page has none to carry
    const second = await h.http().get('/console/schedules').query({ cursor }).set('Cookie', cookie).expect(200);
    expect(second.text).toContain('sched-52');
    expect(second.text).toContain(`<input type="hidden" name="cursor" value="${cursor}">`);
    const [{ id }] = await h.db.dataSource.query(`SELECT id::text AS id FROM schedules WHERE tenant_id = $1 AND key = 'sched-52'`, [t.id]);
    const paused = await h.http().post(`/console/schedules/${id}/pause`).set('Cookie', cookie).type('form').send({ cursor }).expect(303);
    expect(paused.headers.location).toBe(`/console/schedules?cursor=${cursor}&done=paused`);
    const back = await h.http().get(paused.headers.location).set('Cookie', cookie).expect(200);
    expect(back.text).toContain('Schedule paused.');
    expect(back.text).toContain('sched-52');
    // A cursor the list would refuse is not carried: the first page instead.
    for (const bad of ['', 'not a cursor', 'AA', 'x'.repeat(1101)]) {
      const resumed = await h.http().post(`/console/schedules/${id}/resume`).set('Cookie', cookie).type('form').send({ cursor: bad }).expect(303);
      expect(resumed.headers.location).toBe('/console/schedules?done=resumed');
    }
    const api = await h.http().get(`/v1/schedules/${id}`).set(bearer(t.apiKey)).expect(200);
    expect(api.body.paused).toBe(false);
  });

  it("shows a schedule's last runs as a strip (ran, late, failed, skipped, removed), each run with a job linking to it", async () => {
    const cookie = await signIn(acme.apiKey);
    const s = await h.http().post('/v1/schedules').set(bearer(acme.apiKey))
      .send({ key: 'hourly-report', kind: 'noop', cron: '0 * * * *', timezone: 'UTC', payload: {} }).expect(201);
    const id = s.body.id as string;
    await h.db.dataSource.query(`UPDATE schedules SET created_at = now() - interval '3 days' WHERE id = $1`, [id]);
    const hourAgo = (n: number) => new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 - n * 3_600_000);
    const run = async (n: number, state: string, lateMs: number) => {
      const at = hourAgo(n);
      const [{ id: jobId }] = await h.db.dataSource.query(
        `INSERT INTO jobs (tenant_id, key, kind, run_at, state, attempts, finished_at) VALUES ($1, $2, 'noop', $3, $4, 1, $3) RETURNING id::text AS id`,
        [acme.id, `schedule:${id}:${at.toISOString().replace('.000Z', 'Z')}`, at, state],
      );
      await h.db.dataSource.query(
        `INSERT INTO job_attempts (job_id, tenant_id, attempt, started_at, finished_at, outcome) VALUES ($1, $2, 1, $3::timestamptz + $4 * interval '1 millisecond', $3, 'succeeded')`,
        [jobId, acme.id, at, lateMs],
      );
      return jobId as string;
    };
    const ran = await run(1, 'd', 200);
    const late = await run(2, 'd', 5 * 60_000);
    const failed = await run(3, 'x', 100);
    // hour 4 has no job: skipped; hour 5's job never started: missed (a minute is the strip's expectation)
    const [{ id: missed }] = await h.db.dataSource.query(
      `INSERT INTO jobs (tenant_id, key, kind, run_at, state) VALUES ($1, $2, 'noop', $3, 'q') RETURNING id::text AS id`,
      [acme.id, `schedule:${id}:${hourAgo(5).toISOString().replace('.000Z', 'Z')}`, hourAgo(5)],
    );
    // hour 6's first attempt is still running: started, its start recorded only as it ends
    const [{ id: running }] = await h.db.dataSource.query(
      `INSERT INTO jobs (tenant_id, key, kind, run_at, state, attempts) VALUES ($1, $2, 'noop', $3, 'r', 1) RETURNING id::text AS id`,
      [acme.id, `schedule:${id}:${hourAgo(6).toISOString().replace('.000Z', 'Z')}`, hourAgo(6)],
    );
    // hour 7 ran, and retention has removed its job since: removed, not skipped
    await h.db.dataSource.query(`INSERT INTO retired_keys (tenant_id, key, removed_on, state) VALUES ($1, $2, current_date, 'd')`, [
      acme.id,
      `schedule:${id}:${hourAgo(7).toISOString().replace('.000Z', 'Z')}`,
    ]);
    // hour 8's first attempt failed and its retry waits: not over, so not "ran" (the watch holds it too)
    const retrying = await run(8, 'q', 100);
    const list = await h.http().get('/console/schedules').set('Cookie', cookie).expect(200);
    expect(list.text).toContain(`href="/console/schedules/${id}"`);
    const page = await h.http().get(`/console/schedules/${id}`).set('Cookie', cookie).expect(200);
    expect(page.text).toContain('Last 30 runs');
    expect(page.text).toContain(`class="run run-ran" href="/console/jobs/${ran}"`);
    expect(page.text).toContain(`class="run run-late" href="/console/jobs/${late}"`);
    expect(page.text).toContain(`class="run run-failed" href="/console/jobs/${failed}"`);
    expect(page.text).toMatch(/<span class="run run-skipped"/);
    expect(page.text).toContain(`class="run run-missed" href="/console/jobs/${missed}"`);
    expect(page.text).toContain(`class="run run-running" href="/console/jobs/${running}"`);
    expect(page.text).toContain(`class="run run-running" href="/console/jobs/${retrying}"`);
    expect(page.text).toMatch(/<span class="run run-removed" title="[^"]* · removed · its job ended succeeded and was removed by retention on /);
    expect(page.text).toContain('<span class="word-removed">removed</span>');
    await h.db.dataSource.query(`UPDATE schedules SET expect_within_seconds = 300, last_outcome = 'missed', last_outcome_at = now() WHERE id = $1`, [id]);
    expect((await h.http().get(`/console/schedules/${id}`).set('Cookie', cookie).expect(200)).text).toContain('<span class="word-missed">missed</span>');
    await h.db.dataSource.query(`UPDATE schedules SET paused = true, last_error = 'SetAsideError: refused <b>' WHERE id = $1`, [id]);
    expect((await h.http().get(`/console/schedules/${id}`).set('Cookie', cookie).expect(200)).text).toContain(
      '<dt>Paused by Almanac</dt><dd class="error-text">SetAsideError: refused &lt;b&gt;</dd>',
    );
    await h.http().get(`/console/schedules/${id}`).set('Cookie', await signIn(globex.apiKey)).expect(404);
  });

  it('ends a session whose key was revoked, and on sign-out', async () => {
    const made = await h.http().post(`/v1/admin/tenants/${acme.id}/keys`).set(bearer(ADMIN_TOKEN)).expect(201);
    const cookie = await signIn(made.body.apiKey);
    await h.http().get('/console').set('Cookie', cookie).expect(200);
    await h.http().delete(`/v1/admin/tenants/${acme.id}/keys/${made.body.id}`).set(bearer(ADMIN_TOKEN)).expect(204);
    const gone = await h.http().get('/console').set('Cookie', cookie).expect(303);
    expect(gone.headers.location).toBe('/console/sign-in?why=ended');
    expect(String(gone.headers['set-cookie'])).toContain('Max-Age=0'); // the browser stops sending it
    const out = await h.http().post('/console/sign-out').set('Cookie', cookie).expect(303);
    expect(String(out.headers['set-cookie'])).toContain('Max-Age=0');
  });

  it('reads forms only under /console: the API still answers a form body with its 415', async () => {
    const res = await h.http().post('/v1/jobs').set(bearer(acme.apiKey)).type('form').send({ kind: 'noop', key: 'f', runAt: inMs(DAY) }).expect(415);
    expect(res.body).toMatchObject({ statusCode: 415, details: [{ field: 'content-type' }] });
  });

  it('serves its assets by content hash, cacheable, and nothing else', async () => {
    const page = await h.http().get('/console/sign-in').expect(200);
    const css = /href="(\/console\/assets\/console\.[0-9a-f]{12}\.css)"/.exec(page.text)?.[1] as string;
    const js = /src="(\/console\/assets\/console\.[0-9a-f]{12}\.js)"/.exec(page.text)?.[1] as string;
    const c = await h.http().get(css).expect(200);
    expect(c.headers['cache-control']).toContain('immutable');
    expect(c.headers['content-type']).toContain('text/css');
    await h.http().get(js).expect(200);
    await h.http().get('/console/assets/..%2F..%2Fpackage.json').expect(404);
  });
});

describe('console with ALMANAC_CONSOLE_SECURE_COOKIE=false', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApi({ ALMANAC_CONSOLE_SECURE_COOKIE: 'false' });
  });
  afterAll(() => h.close());

  it('sets the session cookie without Secure, for plain http', async () => {
    const t = await h.createTenant('plain-http');
    const res = await h.http().post('/console/sign-in').type('form').send({ token: t.apiKey }).expect(303);
    const cookie = String(res.headers['set-cookie']);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).not.toContain('Secure');
  });
});

describe('console behind a trusted proxy that sends its own Host (ALMANAC_TRUST_PROXY=loopback)', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApi({ ALMANAC_TRUST_PROXY: 'loopback' });
  });
  afterAll(() => h.close());

  it("checks a post's Origin against the proxy's X-Forwarded-Host", async () => {
    const t = await h.createTenant('proxied');
    const post = (origin: string, forwardedHost?: string) => {
      const req = h.http().post('/console/sign-in').set('Host', 'localhost:3000').set('Origin', origin);
      return (forwardedHost ? req.set('X-Forwarded-Host', forwardedHost) : req).type('form').send({ token: t.apiKey });
    };
    await post('https://almanac.example.com', 'almanac.example.com').expect(303);
    await post('https://evil.example', 'almanac.example.com').expect(403);
    await post('https://almanac.example.com').expect(403); // the Host alone names the proxy's side
    await post('http://localhost:3000').expect(303);
  });
});

describe('console pages and forms spend the tenant\'s request budget', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApi({ ALMANAC_REQUEST_RATE_LIMIT_PER_SECOND: '6' });
  });
  afterAll(() => h.close());

  it('answers 429 with Retry-After once a tenant\'s overviews exceed its reads per second', async () => {
    const t = await h.createTenant('poller');
    const res = await h.http().post('/console/sign-in').type('form').send({ token: t.apiKey }).expect(303);
    const cookie = String(res.headers['set-cookie']).split(';')[0];
    await h.http().get('/console').set('Cookie', cookie).expect(200); // 5 of the 6
    const over = await h.http().get('/console').set('Cookie', cookie).expect(429);
    expect(over.headers['retry-after']).toBe('1');
    expect(over.text).toContain('request rate limit');
    expect(over.headers['content-type']).toContain('text/html');
  });

  it('counts a form as the API request it makes: a cancel past the budget is refused and cancels nothing', async () => {
    const t = await h.createTenant('clicker');
    const auth = { Authorization: `Bearer ${t.apiKey}` };
    const job = (await h.http().post('/v1/jobs').set(auth).send({ kind: 'noop', key: 'clicked', runAt: inMs(2 * DAY) }).expect(201)).body;
    const res = await h.http().post('/console/sign-in').type('form').send({ token: t.apiKey }).expect(303);
    const cookie = String(res.headers['set-cookie']).split(';')[0];
    const clock = h.app.get<Clock>(Clock);
    const frozen = clock.now(); // no refill while the test runs
    const spy = jest.spyOn(clock, 'now').mockImplementation(() => frozen);
    try {
      await h.http().get('/console').set('Cookie', cookie).expect(200); // 5 of the 6
      await h.http().post('/console/jobs/1/cancel').set('Cookie', cookie).type('form').send({}).expect(404); // the 6th
      const over = await h.http().post(`/console/jobs/${job.id}/cancel`).set('Cookie', cookie).type('form').send({}).expect(429);
      expect(over.headers['retry-after']).toBe('1');
      expect(over.text).toContain('request rate limit');
    } finally {
      spy.mockRestore();
    }
    const [{ state }] = await h.db.dataSource.query(`SELECT state::text AS state FROM jobs WHERE id = $1`, [job.id]);
    expect(state).toBe('s'); // still scheduled
  });
});
