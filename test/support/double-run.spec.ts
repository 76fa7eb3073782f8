import { completed, defineHandler } from '@almanac/kinds';
import { createDataSource } from '@almanac/persistence';
import type { DataSource } from 'typeorm';
import { DOUBLE_RUN_MODES, DoubleRunError, runTwice } from './double-run';

/** A counter bumped outside the job's transaction: every run that gets this far counts. */
async function bumpOutside(url: string): Promise<void> {
  const ds: DataSource = createDataSource({ url, poolSize: 1 });
  await ds.initialize();
  try {
    await ds.query(`UPDATE double_run_counter SET n = n + 1`);
  } finally {
    await ds.destroy();
  }
}

const setup = (h: { ds: DataSource }) => h.ds.query(`CREATE TABLE double_run_counter (n int NOT NULL); INSERT INTO double_run_counter VALUES (0)`);
const effects = async (h: { ds: DataSource }) => (await h.ds.query<{ n: number }[]>(`SELECT n FROM double_run_counter`))[0].n;

describe('runTwice (the double-run kit)', () => {
  it.each(DOUBLE_RUN_MODES)('catches a handler whose effect commits outside the job transaction (%s)', async (mode) => {
    let url = '';
    const careless = defineHandler({
      kind: 'careless',
      timeoutMs: 10_000,
      handle: async () => {
        await bumpOutside(url);
        return completed();
      },
    });
    await expect(
      runTwice(careless, {}, { mode, setup: async (h) => ((url = h.db.url), setup(h)), effects }),
    ).rejects.toThrow(new DoubleRunError(`careless (${mode}): 2 effects, expected exactly 1`));
  });

  it.each(DOUBLE_RUN_MODES)('passes the same effect written through ctx.tx() (%s)', async (mode) => {
    const careful = defineHandler({
      kind: 'careful',
      timeoutMs: 10_000,
      handle: async (ctx) => {
        await (await ctx.tx()).query(`UPDATE double_run_counter SET n = n + 1`);
        return completed();
      },
    });
    const report = await runTwice(careful, {}, { mode, setup, effects });
    expect(report).toMatchObject({ mode, effects: 1, state: 'd' });
    expect(report.attempts.length).toBeGreaterThanOrEqual(2); // the handler really started twice
  });
});
