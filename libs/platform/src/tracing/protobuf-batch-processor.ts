import { context, diag, TraceFlags } from '@opentelemetry/api';
import { type ExportResult, ExportResultCode, getNumberFromEnv, globalErrorHandler, type InstrumentationScope, suppressTracing } from '@opentelemetry/core';
import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from '@opentelemetry/otlp-exporter-base/node-http';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-node';
import { writeResourceSpans, writeSpan } from './otlp-span-writer';
import { ProtoWriter } from './proto-writer';

/** A batch already in OTLP protobuf, and how many spans it holds (the exporter's own metrics count them). */
export interface WrittenBatch {
  bytes: Uint8Array;
  spans: number;
}

/** Exports out at once: the exporter is given this limit (an export past it would fail at once), and flushes wait under it. */
const MAX_EXPORTS = 30;

/** OTLP/HTTP protobuf export of written batches: the SDK exporter's transport, retries and OTEL_EXPORTER_OTLP_* settings. */
export function otlpProtobufBatchExporter(): BatchExporter {
  // convertLegacyHttpOptions is how exporter-trace-otlp-proto 0.223 itself reads the environment.
  const options = convertLegacyHttpOptions({ concurrencyLimit: MAX_EXPORTS }, 'TRACES', 'v1/traces', { 'Content-Type': 'application/x-protobuf' });
  const serializer = { serializeRequest: (b: WrittenBatch) => b.bytes, deserializeResponse: (d: Uint8Array) => ProtobufTraceSerializer.deserializeResponse(d) };
  return new OTLPExporterBase(createOtlpHttpExportDelegate(options, serializer, 'otlp_http_span_exporter', { name: 'span', countItems: (b) => b.spans }, undefined));
}

export type BatchExporter = Pick<OTLPExporterBase<WrittenBatch>, 'export' | 'shutdown'>;

/** When a batch leaves, and how many spans may wait (written, or being sent) before more are dropped. */
export interface BatchSettings {
  delayMs: number;
  batchSize: number;
  queueSize: number;
}

/** The SDK's own OTEL_BSP_* settings and defaults. */
export function batchSettingsFromEnv(): BatchSettings {
  return {
    delayMs: getNumberFromEnv('OTEL_BSP_SCHEDULE_DELAY') ?? 5000,
    batchSize: getNumberFromEnv('OTEL_BSP_MAX_EXPORT_BATCH_SIZE') ?? 512,
    queueSize: getNumberFromEnv('OTEL_BSP_MAX_QUEUE_SIZE') ?? 2048,
  };
}

interface Written {
  w: ProtoWriter;
  spans: number;
}

/**
 * The SDK's BatchSpanProcessor, with one change: a sampled span is written to OTLP protobuf the
 * moment it ends, and a batch only frames what was written. The SDK's processor keeps each span
 * object until its batch fills (about 0.35 s at 10 % sampling in a busy worker) and then
 * serialises all of them in two passes; here a span's memory is free as it ends
 * (docs/decisions/2026-12-05-tracing-cost.md). Spans written or being sent count against
 * OTEL_BSP_MAX_QUEUE_SIZE; more are dropped, and a warning says how many.
 */
export class ProtobufBatchSpanProcessor implements SpanProcessor {
  /** Written spans by resource and scope, each a run of whole Span fields. */
  private written = new Map<Resource, Map<InstrumentationScope, Written>>();
  private count = 0;
  private sending = 0;
  private dropped = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Exports not yet answered, each resolving to its failure, if any. */
  private readonly exports = new Set<Promise<Error | undefined>>();
  private stopping: Promise<void> | undefined;
  private readonly batchSize: number;

  constructor(
    private readonly exporter: BatchExporter = otlpProtobufBatchExporter(),
    private readonly settings: BatchSettings = batchSettingsFromEnv(),
  ) {
    this.batchSize = Math.min(settings.batchSize, settings.queueSize); // as the SDK's processor clamps it
  }

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if (this.stopping || (span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
    if (this.count + this.sending >= this.settings.queueSize) {
      this.dropped++;
      return;
    }
    let scopes = this.written.get(span.resource);
    if (!scopes) this.written.set(span.resource, (scopes = new Map<InstrumentationScope, Written>()));
    let written = scopes.get(span.instrumentationScope);
    if (!written) scopes.set(span.instrumentationScope, (written = { w: new ProtoWriter(), spans: 0 }));
    const at = written.w.pos;
    try {
      writeSpan(written.w, span);
    } catch (err) {
      // A span that cannot be written must neither reach the code that ended it nor corrupt its batch.
      written.w.pos = at;
      this.dropped++;
      globalErrorHandler(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    written.spans++;
    this.count++;
    this.schedule();
  }

  /** Sends what is written and waits for every export; rejects with the first that failed. */
  async forceFlush(): Promise<void> {
    let failure: Error | undefined;
    for (let i = 0; i < 2; i++) { // twice: a flush held back by MAX_EXPORTS goes once those are answered
      this.flush();
      failure ??= (await Promise.all([...this.exports])).find((e) => e !== undefined);
    }
    if (failure) throw failure;
  }

  /** Sends what is written, once; spans that end from now on are dropped, as by the SDK's processor. */
  shutdown(): Promise<void> {
    this.stopping ??= this.forceFlush().finally(() => this.exporter.shutdown());
    return this.stopping;
  }

  private schedule(): void {
    if (this.count >= this.batchSize) this.flush();
    else if (this.count > 0) this.timer ??= setTimeout(() => this.flush(), this.settings.delayMs).unref();
  }

  /** Sends everything written in one request, unless MAX_EXPORTS are out (an answer sends it then). */
  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.count === 0 || this.exports.size >= MAX_EXPORTS) return;
    if (this.dropped > 0) diag.warn(`ProtobufBatchSpanProcessor: dropped ${this.dropped} spans (OTEL_BSP_MAX_QUEUE_SIZE, or a span that could not be written)`);
    this.dropped = 0;
    const batch = this.written;
    const spans = this.count;
    this.written = new Map();
    this.count = 0;
    this.sending += spans;
    const sent: Promise<Error | undefined> = this.send(batch, spans)
      .then(() => undefined, (err: unknown) => {
        const e = err instanceof Error ? err : new Error(String(err));
        globalErrorHandler(e);
        return e;
      })
      .finally(() => {
        this.sending -= spans;
        this.exports.delete(sent);
        if (!this.stopping) this.schedule();
      });
    this.exports.add(sent);
  }

  private async send(batch: Map<Resource, Map<InstrumentationScope, Written>>, spans: number): Promise<void> {
    const w = new ProtoWriter();
    for (const [resource, scopes] of batch) {
      if (resource.asyncAttributesPending) await resource.waitForAsyncAttributes?.();
      writeResourceSpans(w, resource, [...scopes].map(([scope, written]) => [scope, written.w.finish()]));
    }
    // The export's own HTTP call is not traced (as the SDK's processor does it).
    const result = await new Promise<ExportResult>((resolve) => context.with(suppressTracing(context.active()), () => this.exporter.export({ bytes: w.finish(), spans }, resolve)));
    if (result.code !== ExportResultCode.SUCCESS) throw result.error ?? new Error('ProtobufBatchSpanProcessor: the export failed');
  }
}
