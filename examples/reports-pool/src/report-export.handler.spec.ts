import { DOUBLE_RUN_MODES, runTwice } from '@almanac/testing/double-run';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
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
});
