import { endFailed, endWith, inSpanContext, jobAttributes, startRunSpan, tracer } from '@almanac/platform';
import type { RunnableJob } from '@almanac/persistence';
import { type Context, ROOT_CONTEXT, type Span, SpanKind, trace } from '@opentelemetry/api';
import type { HandlerRun } from './handler-run';

/**
 * The spans of one run (OpenTelemetry messaging `process`): a root span per attempt, linked, not
 * parented, to the ingest span that created the job (it may have run months ago), from the claim
 * to the outcome's write. The claim is its `claimed` event (the span starts as the claim is sent),
 * not a span: every exported span is worker CPU. The handler is a child (ctx.tx() and outbound
 * calls nest under it).
 * With tracing off, or when the run is not sampled (decided before any SDK span is made:
 * startRunSpan), the root is the API's non-recording span and nothing else is made.
 */
export class RunSpan {
  private readonly root: Span;

  constructor(row: RunnableJob, pool: string, claim: { fromMs: number; toMs: number }) {
    this.root = startRunSpan(`process ${row.kind}`, SpanKind.CONSUMER, claim.fromMs, row.traceParent);
    if (!this.root.isRecording()) return; // tracing off, or the run not sampled: a non-recording span and nothing more (bench/run-span.ts, bench/run-span-export.ts)
    this.root.setAttributes(jobAttributes(row));
    this.root.setAttributes({ 'messaging.operation.type': 'process', 'messaging.operation.name': 'process', 'messaging.consumer.group.name': pool });
    this.root.addEvent('claimed', claim.toMs); // the span starts as the claim is sent: an event, not a child span (a third fewer spans to export)
  }

  /**
   * Runs the handler inside its span, whose context `run` gets: spans it starts (a transaction,
   * an http call) are its children. With tracing off, the root context.
   */
  async handler(kind: string, run: (traceContext: Context) => Promise<HandlerRun>): Promise<HandlerRun> {
    if (!this.root.isRecording()) return run(ROOT_CONTEXT);
    const span = tracer.startSpan(`handle ${kind}`, {}, trace.setSpan(ROOT_CONTEXT, this.root));
    const result = await inSpanContext(span, run);
    if (result.error !== undefined) endFailed(span, result.error);
    else {
      if (result.outcome) span.setAttribute('almanac.outcome', result.outcome.type);
      span.end();
    }
    return result;
  }

  /**
   * Ends the run's span when its outcome is written, with what became of the write. No span of
   * its own: a group commit's wait is no one job's work, and every exported span is worker CPU
   * (bench/tracing.ts).
   */
  write<T extends string>(write: () => Promise<T>): Promise<T> {
    if (!this.root.isRecording()) return write();
    return endWith(this.root, write, (result) => ({ 'almanac.write': result }));
  }

  /** Ends the run's span without a write (released at shutdown). */
  end(note: string): void {
    this.root.setAttribute('almanac.write', note);
    this.root.end();
  }
}
