import { endFailed, endWith, inSpanContext, jobAttributes, startRunChildSpan, startRunSpan } from '@almanac/platform';
import type { RunnableJob } from '@almanac/persistence';
import { type Context, INVALID_TRACEID, ROOT_CONTEXT, type Span, SpanKind } from '@opentelemetry/api';
import type { HandlerRun } from './handler-run';

/**
 * The spans of one run (OpenTelemetry messaging `process`): a root span per attempt, from the
 * claim to the outcome's write, linked (not parented) to the ingest span that created the job; the
 * handler is its child. Every exported span is worker CPU, so the claim is an event and the write
 * no span (docs/decisions/2026-12-05-tracing-cost.md). A run not sampled makes no SDK span: its
 * non-recording span still carries its trace, unsampled, to what the handler starts and calls.
 */
export class RunSpan {
  private readonly root: Span;

  constructor(row: RunnableJob, pool: string, claim: { fromMs: number; toMs: number }) {
    this.root = startRunSpan(`process ${row.kind}`, SpanKind.CONSUMER, claim.fromMs, row.traceParent);
    if (!this.root.isRecording()) return;
    this.root.setAttributes(jobAttributes(row));
    this.root.setAttributes({ 'messaging.operation.type': 'process', 'messaging.operation.name': 'process', 'messaging.consumer.group.name': pool });
    this.root.addEvent('claimed', claim.toMs);
  }

  /** Runs the handler inside its span, whose context `run` gets (a transaction, an http call nest under it). */
  async handler(kind: string, run: (traceContext: Context) => Promise<HandlerRun>): Promise<HandlerRun> {
    if (!this.root.isRecording()) return this.root.spanContext().traceId === INVALID_TRACEID ? run(ROOT_CONTEXT) : inSpanContext(this.root, run); // invalid: tracing off
    const span = startRunChildSpan(`handle ${kind}`, this.root);
    const result = await inSpanContext(span, run);
    if (result.error !== undefined) endFailed(span, result.error);
    else span.setAttributes(result.outcome ? { 'almanac.outcome': result.outcome.type } : {}).end();
    return result;
  }

  /** Ends the run's span when its outcome is written (no span of its own: a group commit is no one job's work). */
  write<T extends string>(write: () => Promise<T>): Promise<T> {
    if (!this.root.isRecording()) return write();
    return endWith(this.root, write, (result) => ({ 'almanac.write': result }));
  }

  /** Ends the run's span without a write (released at shutdown). */
  end(note: string): void {
    this.root.setAttribute('almanac.write', note).end();
  }
}
