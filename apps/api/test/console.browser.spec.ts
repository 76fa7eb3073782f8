import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { type ApiHarness, DAY, inMs, MINUTE, startApi } from './api-harness';

/** Debian's Chromium (.ci/run installs it); nothing here downloads a browser. */
const CHROMIUM = process.env.ALMANAC_CHROMIUM ?? '/usr/bin/chromium';
/** `ALMANAC_CONSOLE_SCREENSHOTS=docs/console npx jest console.browser` refreshes the pictures in docs/api.md. */
const SHOTS = process.env.ALMANAC_CONSOLE_SCREENSHOTS ?? mkdtempSync(join(tmpdir(), 'almanac-console-'));

describe('console in a real browser', () => {
  let h: ApiHarness;
  let browser: Browser;
  let page: Page;
  let tenant: { id: number; apiKey: string };
  /** Every Content-Security-Policy report the pages cause, from the first page on. */
  const violations: string[] = [];
  const auth = () => ({ Authorization: `Bearer ${tenant.apiKey}` });

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`no browser at ${CHROMIUM}: apt-get install chromium (or set ALMANAC_CHROMIUM)`);
    mkdirSync(SHOTS, { recursive: true });
    h = await startApi();
    tenant = await h.createTenant('acme-billing');
    await seed();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  /** A tenant's morning: invoices ahead, some run in the last hour, one dead, a nightly schedule. */
  async function seed(): Promise<void> {
    const jobs = [];
    for (let i = 1; i <= 12; i++) jobs.push({ kind: 'noop', key: `invoice:2026-12:customer-${i}`, runAt: inMs(i * 7 * MINUTE), payload: { customer: i, amountCents: 1250 * i } });
    jobs.push({ kind: 'noop', key: 'report:weekly:emea', runAt: inMs(3 * DAY), payload: { region: 'emea' } });
    await h.http().post('/v1/jobs/batch').set(auth()).send({ jobs }).expect(200);
    // The last hour, as the workers would have left it (a worker is not part of this test).
    await h.db.dataSource.query(
      `WITH j AS (INSERT INTO jobs (tenant_id, key, kind, run_at, state, attempts, finished_at, payload)
                  SELECT $1, 'reminder:' || g, 'noop', now() - (g * 15 || ' seconds')::interval, CASE WHEN g = 7 THEN 'x' ELSE 'd' END, 1, now(), '{"n": 1}'
                    FROM generate_series(1, 236) g RETURNING id, run_at, state)
       INSERT INTO job_attempts (job_id, tenant_id, attempt, started_at, finished_at, outcome, error)
       SELECT id, $1, 1, run_at + ((3 + (id % 7) * (id % 5)) || ' milliseconds')::interval, run_at + interval '180 milliseconds',
              CASE WHEN state = 'x' THEN 'failed' ELSE 'succeeded' END, CASE WHEN state = 'x' THEN 'HTTP 502 from billing' END FROM j`,
      [tenant.id],
    );
    await h.http().post('/v1/schedules').set(auth()).send({ key: 'nightly-dunning', kind: 'noop', cron: '30 2 * * *', timezone: 'Europe/Berlin', payload: {} }).expect(201);
  }

  it('signs in, finds a job by key, cancels it and sees it cancelled', async () => {
    await page.goto(`${h.url}/console`);
    expect(page.url()).toBe(`${h.url}/console/sign-in`);
    await page.screenshot({ path: join(SHOTS, 'sign-in.png') });
    await page.fill('#token', tenant.apiKey);
    await page.keyboard.press('Enter');
    await page.waitForURL(`${h.url}/console`);
    expect(await page.textContent('h1')).toBe('Overview');
    // Chromium keeps a Secure cookie set over http://127.0.0.1 (a potentially trustworthy origin).
    expect((await page.context().cookies()).find((c) => c.name === 'almanac_console')).toMatchObject({ secure: true, httpOnly: true, path: '/console' });
    expect(await page.locator('.stat', { hasText: 'due in the next hour' }).locator('.value').textContent()).toBe('8');
    await page.screenshot({ path: join(SHOTS, 'overview.png'), fullPage: true });

    // The keyboard alone: g j to the jobs, / to the search, the key, Enter.
    await page.keyboard.press('g');
    await page.keyboard.press('j');
    await page.waitForURL(`${h.url}/console/jobs`);
    await page.keyboard.press('/');
    await page.keyboard.type('invoice:2026-12:customer-3');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/console\/jobs\/\d+$/);
    expect(await page.textContent('h1')).toBe('invoice:2026-12:customer-3');
    expect(await page.textContent('.facts .state')).toBe('queued');
    await page.screenshot({ path: join(SHOTS, 'job.png'), fullPage: true });

    page.once('dialog', (d) => void d.accept());
    await page.click('button:has-text("Cancel job")');
    await page.waitForURL(/done=cancelled/);
    expect(await page.textContent('.notice')).toBe('Job cancelled.');
    expect(await page.textContent('.facts .state')).toBe('cancelled');
    const id = /\/jobs\/(\d+)/.exec(page.url())?.[1];
    const api = await h.http().get(`/v1/jobs/${id}`).set(auth()).expect(200);
    expect(api.body.state).toBe('cancelled');
  });

  it('pages through jobs with j/k, shows a dead job\'s timeline, and the schedules in their zone', async () => {
    await page.goto(`${h.url}/console/jobs?state=succeeded`);
    await page.keyboard.press('j');
    await page.keyboard.press('j');
    expect(await page.locator('tr.selected').count()).toBe(1);
    await page.screenshot({ path: join(SHOTS, 'jobs.png') });
    await page.goto(`${h.url}/console/jobs?state=dead`);
    await page.click('tbody tr a');
    expect(await page.textContent('.timeline')).toContain('HTTP 502 from billing');
    expect(await page.locator('button', { hasText: 'Retry' }).count()).toBe(1);
    await page.goto(`${h.url}/console/schedules`);
    expect(await page.textContent('tbody')).toContain('Europe/Berlin');
    await page.screenshot({ path: join(SHOTS, 'schedules.png'), fullPage: true });
  });

  it('takes any key after g: a quote or a backslash breaks no selector, and g j still goes to the jobs', async () => {
    const errors: string[] = [];
    const onError = (e: Error) => errors.push(e.message);
    page.on('pageerror', onError);
    try {
      await page.goto(`${h.url}/console`);
      for (const key of ['"', '\\', "'"]) {
        await page.keyboard.press('g');
        await page.keyboard.press(key);
      }
      await page.evaluate(() => new Promise((r) => setTimeout(r, 50))); // the page's errors reach us first
      expect(errors).toEqual([]);
      expect(page.url()).toBe(`${h.url}/console`);
      await page.keyboard.press('g');
      await page.keyboard.press('j');
      await page.waitForURL(`${h.url}/console/jobs`);
    } finally {
      page.off('pageerror', onError);
    }
  });

  it('runs no inline script or style: no page so far broke its CSP', async () => {
    await page.goto(`${h.url}/console`);
    await page.waitForLoadState('load');
    expect(violations).toEqual([]);
  });
});
