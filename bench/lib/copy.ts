import { Client } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import type { BenchRow } from './dataset';

function escapeCopyText(s: string): string {
  return s.replace(/[\\\n\r\t]/g, (c) => ({ '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' })[c]!);
}

/** COPY text lines for the same columns insertBatch writes. */
export function copyLines(rows: readonly BenchRow[]): string[] {
  return rows.map(
    ({ tenantId, job }) =>
      `${tenantId}\t${escapeCopyText(job.kind)}\t${escapeCopyText(job.key)}\t${job.runAt.toISOString()}\t${escapeCopyText(JSON.stringify(job.payload))}\t${job.maxAttempts ?? 3}\ts\n`,
  );
}

/**
 * Streams the rows through one COPY: the reference bulk-load rate. Rendering the text is
 * inside the timed part, as serialising is inside insertBatch.
 */
export async function copyJobs(client: Client, rows: readonly BenchRow[]): Promise<void> {
  {
    const stream = client.query(copyFrom('COPY jobs (tenant_id, kind, key, run_at, payload, max_attempts, state) FROM STDIN'));
    const chunk = 1000;
    async function* chunks() {
      for (let i = 0; i < rows.length; i += chunk) yield copyLines(rows.slice(i, i + chunk)).join('');
    }
    await pipeline(Readable.from(chunks()), stream);
  }
}
