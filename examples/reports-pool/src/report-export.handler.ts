import { completed, defineHandler, retry } from '@almanac/delivery';
import { type Static, Type } from '@sinclair/typebox';
import { appendFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * `report-export`: appends one line per job to the tenant's export file (`<dir>/<tenant>.csv`):
 * the day and how many of the tenant's jobs succeeded that day. An append is not idempotent, so
 * it is guarded by an effect key checked first (`ctx.effects.once`): a second run of the job
 * finds the line recorded and does not append again.
 *
 * Payload: `{ "day": "2026-11-30" }`.
 */
export const ReportExportPayloadSchema = Type.Object(
  { day: Type.String({ format: 'date', description: 'The UTC day to report' }) },
  { additionalProperties: false },
);
export type ReportExportPayload = Static<typeof ReportExportPayloadSchema>;

export interface ReportExportOptions {
  /** Where the tenants' export files go (REPORTS_DIR). */
  dir: string;
}

export function reportExportHandler(opts: ReportExportOptions) {
  return defineHandler<ReportExportPayload>({
    kind: 'report-export',
    timeoutMs: 30_000,
    pool: 'reports',
    payloadSchema: ReportExportPayloadSchema,
    async handle(ctx, { day }) {
      const tx = await ctx.tx();
      const [{ n }]: { n: number }[] = await tx.query(
        `SELECT count(*)::int AS n FROM job_attempts
          WHERE tenant_id = $1 AND outcome = 'succeeded' AND finished_at >= $2::date AND finished_at < $2::date + 1`,
        [ctx.tenantId, day],
      );
      const file = join(opts.dir, `${ctx.tenantId}.csv`);
      const line = `${day},${n},${ctx.key}\n`;
      const written = await ctx.effects.once(`report-export:${ctx.key}`, async () => {
        await mkdir(opts.dir, { recursive: true });
        await appendFile(file, line);
        return { file, succeeded: n };
      });
      if (written.busy) return retry({ delayMs: 1000, reason: 'this export is being written by another run' });
      return completed({ ...written.result, alreadyWritten: !written.ran });
    },
  });
}
