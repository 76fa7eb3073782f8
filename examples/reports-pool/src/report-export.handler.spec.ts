import { createHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { DOUBLE_RUN_MODES, runTwice } from '@almanac/testing/double-run';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { reportExportHandler } from './report-export.handler';

describe('report-export (a kind shipped outside the core)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'reports-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each(DOUBLE_RUN_MODES)('appends exactly one line when the job runs twice (%s)', async (mode) => {
    const out = join(dir, mode);
    const report = await runTwice(reportExportHandler({ dir: out }), { day: '2026-11-30', total: 42 }, {
      mode,
      effects: async () => readFileSync(join(out, '1.csv'), 'utf8').trim().split('\n').length,
    });
    expect(report.state).toBe('d');
    expect(readFileSync(join(out, '1.csv'), 'utf8')).toMatch(/^2026-11-30,42,k-/);
  });

  it('snoozes, writing nothing and spending no attempt, while another run holds the export', async () => {
    const out = join(dir, 'busy');
    const h = await createHarness({ handlers: [reportExportHandler({ dir: out })] });
    try {
      const [id] = await h.enqueue([{ kind: 'report-export', maxAttempts: 1, payload: { day: '2026-11-30', total: 7 } }]);
      const [{ key }] = await h.ds.query(`SELECT key FROM jobs WHERE id = $1`, [id]);
      await h.ds.query(`INSERT INTO job_effects (tenant_id, effect_key, job_id, claimed_at) VALUES (1, $1, $2, now())`, [`report-export:${key}`, id]);
      await h.hot.runOnce();
      await h.runWorker(h.worker({ pools: ['reports'] }));
      expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 1, last_error: 'this export is being written by another run' });
      expect((await h.attempts(id)).map((a) => a.outcome)).toEqual(['snoozed']);
      expect(existsSync(join(out, '1.csv'))).toBe(false);
    } finally {
      await destroyHarness(h);
    }
  });
});
