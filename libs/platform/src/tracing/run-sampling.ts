import {
  type Context, createContextKey, INVALID_SPAN_CONTEXT, ROOT_CONTEXT, type Span, SpanKind, trace, TraceFlags,
} from '@opentelemetry/api';
import {
  AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, RandomIdGenerator, type Sampler, SamplingDecision,
  type SamplingResult, TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-node';
import type { Env } from '@almanac/config';
import { linksTo, tracer } from './job-spans';
import { LeanSpan, type LeanSpanSink } from './lean-span';

/**
 * Whether a run is sampled, decided before any SDK span is made (docs/decisions/2026-12-05-tracing-cost.md):
 * `linked` from the W3C trace flags of the ingest span the row links to (undefined: no link), true
 * to record and export the run, false for no SDK span, undefined for a root, which `root` decides
 * on the trace id the run will carry, as the SDK's root sampler decides a new trace; `rootsOff`
 * when the root sampler is always_off, so no root run needs a trace id to be decided on.
 */
export interface RunDecision {
  linked(ingestFlags: number | undefined): boolean | undefined;
  root(traceId: string): boolean;
  rootsOff: boolean;
}

/** Set on the context of a run's root span that was decided sampled here: the SDK's sampler then agrees. */
const DECIDED_SAMPLED = createContextKey('almanac.run decided sampled');
const SAMPLED_ROOT = ROOT_CONTEXT.setValue(DECIDED_SAMPLED, true);
const RECORD_AND_SAMPLED: SamplingResult = { decision: SamplingDecision.RECORD_AND_SAMPLED };
/** An unsampled root run under always_off: the API's non-recording span, no ids (one for all). */
const NO_TRACE: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

const ids = new RandomIdGenerator();
let decideRun: RunDecision | undefined; // undefined: the SDK's sampler decides each run (no startTracing: tests' own providers)
let leanSink: LeanSpanSink | undefined; // undefined: a sampled run's spans are the SDK's

/**
 * OTEL_TRACES_SAMPLER and its argument as the SDK reads them (its values and defaults, an
 * unknown value being parentbased_always_on), as the SDK's sampler and as a run's decision:
 * - a run whose row links to an ingest span follows that span's sampled flag under a
 *   `parentbased_*` sampler, as a child follows its parent. OpenTelemetry's ParentBased sampler
 *   looks at the parent only, and a run has none (it is linked), but a run decided apart from its
 *   request exports half-traces: a run whose link points at a span that was never exported, or a
 *   request whose job's run is missing. A sampler that is not parent-based ignores the flag.
 * - otherwise the run is a root, which the root sampler decides on the run's trace id: so
 *   traceidratio keeps a run's children (they carry its trace id) with it, and drops them with it.
 */
export function runSamplingFromEnv(env: Env): { sampler: Sampler; decide: RunDecision } {
  const name = env.OTEL_TRACES_SAMPLER?.trim() || 'parentbased_always_on';
  const arg = env.OTEL_TRACES_SAMPLER_ARG?.trim() ? Number(env.OTEL_TRACES_SAMPLER_ARG) : NaN;
  const ratio = Number.isFinite(arg) && arg >= 0 && arg <= 1 ? arg : 1;
  const known = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'];
  const kind = known.includes(name) ? name : 'parentbased_always_on';
  const rootName = kind.replace(/^parentbased_/, '');
  const root: Sampler = rootName === 'always_on' ? new AlwaysOnSampler() : rootName === 'always_off' ? new AlwaysOffSampler() : new TraceIdRatioBasedSampler(ratio);
  const parentBased = kind.startsWith('parentbased_');
  const configured = parentBased ? new ParentBasedSampler({ root }) : root;
  const sampler: Sampler = {
    shouldSample: (context: Context, ...rest) => (context.getValue(DECIDED_SAMPLED) ? RECORD_AND_SAMPLED : configured.shouldSample(context, ...rest)),
    toString: () => `AlmanacRunSampling{${configured.toString()}}`,
  };
  const decide: RunDecision = {
    linked: (flags) => (parentBased && flags !== undefined ? (flags & 1) === 1 : undefined),
    root: (traceId) => root.shouldSample(ROOT_CONTEXT, traceId, '', SpanKind.CONSUMER, {}, []).decision === SamplingDecision.RECORD_AND_SAMPLED,
    rootsOff: rootName === 'always_off',
  };
  return { sampler, decide };
}

/**
 * Makes runs decide their sampling with `decide` (startTracing), or the SDK's sampler (undefined);
 * with `sink`, a sampled run's spans are LeanSpans that end into it, else the SDK's.
 */
export function setRunDecision(decide: RunDecision | undefined, sink?: LeanSpanSink): void {
  decideRun = decide;
  leanSink = decide && sink;
}

/** The W3C trace flags of a stored traceparent (`00-<trace id>-<span id>-<flags>`), without parsing the rest. */
function flagsOf(traceParent: string | null | undefined): number | undefined {
  if (!traceParent || traceParent.length !== 55) return undefined;
  const flags = parseInt(traceParent.slice(53), 16);
  return Number.isNaN(flags) ? undefined : flags;
}

/**
 * A child of a run's span, starting now: a LeanSpan under a LeanSpan, else the SDK's, recorded
 * with its run when runs are decided here (as a LeanSpan child is), not decided again by a
 * sampler that is not parent-based.
 */
export function startRunChildSpan(name: string, parent: Span): Span {
  if (parent instanceof LeanSpan) return parent.child(name);
  return tracer.startSpan(name, {}, trace.setSpan(decideRun ? SAMPLED_ROOT : ROOT_CONTEXT, parent));
}

/**
 * The root span of a run, linked to the ingest span its row's traceparent names. When startTracing
 * decides runs, a sampled one gets a LeanSpan (when startTracing gave a sink) or an SDK span that
 * its sampler records without deciding again. An unsampled one gets a non-recording span instead
 * of an SDK span (~1 µs: ids, the sampler, the SDK's counters), whose ids, with the sampled flag
 * off, make what it parents and propagates (ctx.traceContext) unsampled too: its request's trace
 * id and a span id of its own when it followed its link (a downstream that records anyway sees a
 * call from this run, not a child of the API's ingest span, which a batch's jobs share), else those
 * of the trace the root sampler decided on. Under an always_off root sampler a root run carries no
 * trace at all (no ids to make, nothing propagated), as with tracing off. A root on the SDK's
 * spans is the SDK sampler's to decide, on the trace id the SDK gives it.
 */
export function startRunSpan(name: string, kind: SpanKind, startTime: number, traceParent: string | null | undefined): Span {
  if (!decideRun) return tracer.startSpan(name, { kind, startTime, links: linksTo(traceParent) }, ROOT_CONTEXT);
  const linked = decideRun.linked(flagsOf(traceParent));
  if (linked === false) return notSampled((traceParent as string).slice(3, 35), ids.generateSpanId()); // traceparentOf's: valid
  if (linked === undefined && decideRun.rootsOff) return NO_TRACE;
  if (linked === undefined && !leanSink) return tracer.startSpan(name, { kind, startTime, links: linksTo(traceParent) }, ROOT_CONTEXT);
  const traceId = linked ? undefined : ids.generateTraceId();
  if (traceId && !decideRun.root(traceId)) return notSampled(traceId, traceId.slice(16)); // its second half, as random: one id made, not two (~0.2 µs each)
  if (leanSink) return LeanSpan.root(leanSink, name, kind, startTime, linksTo(traceParent), traceId);
  return tracer.startSpan(name, { kind, startTime, links: linksTo(traceParent) }, SAMPLED_ROOT);
}

/** A non-recording span with these ids, not sampled. */
function notSampled(traceId: string, spanId: string): Span {
  return trace.wrapSpanContext({ traceId, spanId, traceFlags: TraceFlags.NONE });
}
