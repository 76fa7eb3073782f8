import { completed, defineHandler } from '@almanac/kinds';
import { propagation, trace } from '@opentelemetry/api';

/**
 * Kind `traced`: what a handler does with ctx.traceContext — a span of its own, the traceparent a
 * call it made would send (handed to `sent` with the job's id), and its transaction.
 */
export function tracedKind(sent: (jobId: string, traceparent: string) => void) {
  return defineHandler({
    kind: 'traced',
    timeoutMs: 5000,
    handle: async (ctx) => {
      const own = trace.getTracer('a handler').startSpan('own work', {}, ctx.traceContext);
      const headers: Record<string, string> = {};
      propagation.inject(trace.setSpan(ctx.traceContext, own), headers);
      sent(ctx.jobId, headers.traceparent);
      await (await ctx.tx()).query('SELECT 1');
      own.end();
      return completed();
    },
  });
}
