import { completed, defineHandler, snooze } from '@almanac/kinds';
import { type Static, Type } from '@sinclair/typebox';
import { appendFile, mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * `report-export`: appends one line per job to the tenant's export file (`<dir>/<tenant>.csv`).
 * An append is not idempotent, so it is guarded twice:
 * - an effect key checked first (`ctx.effects.once`): a second run finds the record done, or
 *   another run's claim, and does not append;
 * - the file itself is checked for the job's key before the append: a worker that died between
 *   its append and the record leaves a stale claim, and the run that takes it over finds the line.
 *
 * Payload: `{ "day": "2026-11-30", "total": 42 }`.
 */
export const ReportExportPayloadSchema = Type.Object(
  {
    day: Type.String({ format: 'date', description: 'The UTC day reported' }),
    total: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);
export type ReportExportPayload = Static<typeof ReportExportPayloadSchema>;

export interface ReportExportOptions {
  /** Where the tenants' export files go (REPORTS_DIR). */
  dir: string;
}

async function linesOf(file: string): Promise<string[]> {
  try {
    return (await readFile(file, 'utf8')).split('\n');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

export function reportExportHandler(opts: ReportExportOptions) {
  return defineHandler<ReportExportPayload>({
    kind: 'report-export',
    timeoutMs: 30_000,
    pool: 'reports',
    payloadSchema: ReportExportPayloadSchema,
    async handle(ctx, { day, total }) {
      const file = join(opts.dir, `${ctx.tenantId}.csv`);
      const line = `${day},${total},${ctx.key}`;
      const written = await ctx.effects.once(`report-export:${ctx.key}`, async () => {
        if ((await linesOf(file)).some((l) => l.endsWith(`,${ctx.key}`))) return { file, appended: false };
        await mkdir(opts.dir, { recursive: true });
        await appendFile(file, `${line}\n`);
        return { file, appended: true };
      });
      if (written.busy) return snooze({ delayMs: written.retryAfterMs, reason: 'this export is being written by another run' });
      return completed({ ...written.result, alreadyWritten: !written.ran });
    },
  });
}
