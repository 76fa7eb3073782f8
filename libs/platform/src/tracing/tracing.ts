import { context, propagation, trace, type TracerProvider } from '@opentelemetry/api';
import { OTLPTraceExporter as OTLPJsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import type { InstrumentationScope } from '@opentelemetry/core';
import { detectResources, envDetector, type Resource, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, ConsoleSpanExporter, NodeTracerProvider, type SpanProcessor } from '@opentelemetry/sdk-trace-node';
import { type Env, readSetting } from '@almanac/config';
import { TRACER_NAME } from './job-spans';
import type { LeanSpanSink } from './lean-span';
import { ProtobufBatchSpanProcessor } from './protobuf-batch-processor';
import { runSamplingFromEnv, setRunDecision } from './run-sampling';

/** Where spans go: nowhere (the API's no-op tracer), an OTLP/HTTP collector, or stdout. */
export type TracingChoice = 'off' | 'otlp' | 'console';

/**
 * Reads the standard OTEL_* variables. Tracing is on only when something says where spans go
 * (an OTLP endpoint, or OTEL_TRACES_EXPORTER), so a deployment that sets nothing exports
 * nothing and pays only the API's no-op calls; OTEL_SDK_DISABLED=true wins over everything.
 */
export function tracingChoice(env: Env): TracingChoice {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return 'off';
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);
  if (exporters.includes('none')) return 'off';
  if (exporters.includes('console')) return 'console';
  if (exporters.includes('otlp')) return 'otlp';
  return env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ? 'otlp' : 'off';
}

/**
 * How a span's context reaches the spans under it. `explicit` (the default): Almanac passes it by
 * hand (the handler's `ctx.traceContext`, which `ctx.tx()` and the `http` kind use), and no global
 * context manager is registered. `async-local-storage`: also the SDK's AsyncLocalStorage context
 * manager, so instrumentation a handler loads finds its parent by itself; it slows every promise
 * of the process (measured in docs/decisions/2026-12-04-tracing.md).
 */
export type TracingContext = 'explicit' | 'async-local-storage';

export function tracingContext(env: Env): TracingContext {
  return readSetting(env, 'ALMANAC_TRACING_CONTEXT');
}

/**
 * How OTLP spans are encoded over HTTP: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else
 * OTEL_EXPORTER_OTLP_PROTOCOL, else `http/protobuf` (the OTLP default; JSON cost the worker more
 * CPU: docs/decisions/2026-12-05-tracing-cost.md). gRPC is not shipped: it is refused by name.
 */
export function otlpProtocol(env: Env): 'http/protobuf' | 'http/json' {
  const value = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() || env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() || 'http/protobuf').toLowerCase();
  if (value === 'http/protobuf' || value === 'http/json') return value;
  throw new Error(`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL / OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (got ${value})`);
}

let provider: NodeTracerProvider | undefined;

/**
 * Starts the OpenTelemetry SDK for this process when tracingChoice says so: the global tracer
 * provider, the W3C trace-context propagator and the context manager ALMANAC_TRACING_CONTEXT asks
 * for (none by default), under service.name `almanac-<role>` unless OTEL_SERVICE_NAME says
 * otherwise. Export is batched; in OTLP protobuf each span is written as it ends
 * (ProtobufBatchSpanProcessor), and a sampled run's spans are LeanSpans (unless an OTEL_*_LIMIT
 * is set). Everything is read from the process's environment: OTEL_BSP_*
 * for batching, OTEL_EXPORTER_OTLP_* by the exporter; OTEL_TRACES_SAMPLER by runSamplingFromEnv,
 * which decides a run's sampling before the SDK makes a span for it. Once per process: the
 * all-in-one's roles share it.
 */
export function startTracing(role: string): TracingChoice {
  const choice = tracingChoice(process.env);
  const contextManager = tracingContext(process.env) === 'explicit' ? null : undefined; // undefined: the SDK's default
  if (choice === 'off' || provider) return choice;
  const protobuf = choice === 'otlp' && otlpProtocol(process.env) === 'http/protobuf' ? new ProtobufBatchSpanProcessor() : undefined;
  const processor: SpanProcessor = protobuf ?? new BatchSpanProcessor(choice === 'console' ? new ConsoleSpanExporter() : new OTLPJsonTraceExporter());
  const resource = resourceFromAttributes({ 'service.name': `almanac-${role}` }).merge(detectResources({ detectors: [envDetector] }));
  const { sampler, decide } = runSamplingFromEnv(process.env);
  provider = new NodeTracerProvider({ resource, sampler, spanProcessors: [processor] });
  provider.register({ contextManager });
  setRunDecision(decide, protobuf && !spanLimitsSet(process.env) ? leanSinkOf(provider, resource, protobuf) : undefined);
  return choice;
}

/** Whether an OTEL_*_LIMIT variable is set (LeanSpans keep the SDK's default limits only). */
function spanLimitsSet(env: Env): boolean {
  return Object.keys(env).some((k) => k.startsWith('OTEL_') && k.endsWith('_LIMIT') && env[k]?.trim());
}

/**
 * Where runs' LeanSpans end: `processor`, under the provider's resource and the scope of its
 * tracer for Almanac's spans, so both kinds of span share one ResourceSpans and ScopeSpans.
 */
export function leanSinkOf(p: Pick<TracerProvider, 'getTracer'>, resource: Resource, processor: SpanProcessor): LeanSpanSink {
  // The SDK's Tracer has the scope as a public field; the API's Tracer type does not show it.
  const { instrumentationScope: scope } = p.getTracer(TRACER_NAME) as unknown as { instrumentationScope: InstrumentationScope };
  return { resource, scope, onEnd: (span) => processor.onEnd(span) };
}

/** Sends what is batched and stops the SDK (at shutdown, after the roles stopped making spans). */
export async function stopTracing(): Promise<void> {
  const p = provider;
  provider = undefined;
  if (!p) return;
  setRunDecision(undefined);
  await p.shutdown().catch(() => undefined); // a collector that is down must not fail a shutdown
  trace.disable();
  context.disable();
  propagation.disable();
}
