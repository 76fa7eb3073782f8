import {
  type Attributes, type AttributeValue, diag, type Exception, type HrTime, type Link, type Span, type SpanContext, SpanKind,
  type SpanStatus, SpanStatusCode, type TimeInput, TraceFlags,
} from '@opentelemetry/api';
import {
  addHrTimes, hrTime, hrTimeDuration, type InstrumentationScope, otperformance, isAttributeValue, isTimeInput, isTimeInputHrTime, millisToHrTime,
  sanitizeAttributes,
} from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import { RandomIdGenerator, type ReadableSpan, type TimedEvent } from '@opentelemetry/sdk-trace-node';

/** Where a run's lean spans go as they end: the provider's one processor, with its resource and Almanac's scope. */
export interface LeanSpanSink {
  resource: Resource;
  scope: InstrumentationScope;
  onEnd(span: ReadableSpan): void;
}

/** The SDK's default count limits (attributes; events; links; attributes per event or link). Runs use SDK spans when an OTEL_*_LIMIT is set. */
const LIMIT = 128;
/** A span's duration until it ends, as the SDK's span has it. */
const NOT_ENDED: HrTime = [-1, -1];
const ids = new RandomIdGenerator();

/**
 * A sampled run's own span (`process`, and its `handle` child), made without the SDK's tracer:
 * no sampler (the run was decided already), no span processors to call on start, no per-span
 * metrics; it is its own ReadableSpan and goes to the protobuf processor as it ends. The SDK's
 * span was most of what a sampled run cost (docs/decisions/2026-12-05-tracing-cost.md). It keeps
 * the SDK span's rules for what a caller sets (valid values only, the default count limits,
 * nothing after end, an exception as its event), so code that finds it in `ctx.traceContext`
 * sees a span like any other, and spans it starts there are the SDK's, parented to it.
 */
export class LeanSpan implements Span, ReadableSpan {
  readonly attributes: Attributes = {};
  readonly links: Link[] = [];
  readonly events: TimedEvent[] = [];
  status: SpanStatus = { code: SpanStatusCode.UNSET };
  endTime: HrTime = [0, 0];
  ended = false;
  droppedAttributesCount = 0;
  droppedEventsCount = 0;
  droppedLinksCount = 0;
  readonly startTime: HrTime;
  private attributeCount = 0;
  private readonly context: SpanContext;
  /** The SDK span's clock (its `otperformance`): a reading at the start, and what brings a performance reading to Date's clock. */
  private readonly perfStart: number;
  private readonly perfOffset: number;
  private readonly startGiven: boolean;

  private constructor(
    private readonly sink: LeanSpanSink,
    public name: string,
    readonly kind: SpanKind,
    startMs: number | undefined,
    readonly parentSpanContext?: SpanContext,
    traceId = parentSpanContext?.traceId ?? ids.generateTraceId(),
  ) {
    this.context = { traceId, spanId: ids.generateSpanId(), traceFlags: TraceFlags.SAMPLED };
    const now = Date.now();
    this.perfStart = otperformance.now();
    this.perfOffset = now - (this.perfStart + otperformance.timeOrigin);
    this.startGiven = startMs !== undefined;
    this.startTime = this.time(startMs ?? now);
  }

  /** A sampled run's root span, starting at `startMs` (epoch ms), linked to `links`, in trace `traceId` (none: a new one). */
  static root(sink: LeanSpanSink, name: string, kind: SpanKind, startMs: number, links: Link[], traceId?: string): LeanSpan {
    const span = new LeanSpan(sink, name, kind, startMs, undefined, traceId);
    for (const link of links) span.addLink(link);
    return span;
  }

  /** A child span starting now (the SDK's default kind, INTERNAL). */
  child(name: string): LeanSpan {
    return new LeanSpan(this.sink, name, SpanKind.INTERNAL, undefined, this.context);
  }

  get resource(): Resource {
    return this.sink.resource;
  }

  get instrumentationScope(): InstrumentationScope {
    return this.sink.scope;
  }

  get duration(): HrTime {
    return this.ended ? hrTimeDuration(this.startTime, this.endTime) : NOT_ENDED;
  }

  spanContext(): SpanContext {
    return this.context;
  }

  isRecording(): boolean {
    return !this.ended;
  }

  setAttribute(key: string, value: AttributeValue | undefined): this {
    if (value == null || this.ended) return this;
    if (key.length === 0 || !isAttributeValue(value)) {
      diag.warn(`Invalid attribute ${key.length === 0 ? 'key' : `value set for key: ${key}`}`);
      return this;
    }
    const isNew = !Object.prototype.hasOwnProperty.call(this.attributes, key);
    if (isNew && this.attributeCount >= LIMIT) this.droppedAttributesCount++;
    else {
      this.attributes[key] = Array.isArray(value) ? value.slice() : value; // the SDK copies an array: later changes to it are not exported
      if (isNew) this.attributeCount++;
    }
    return this;
  }

  setAttributes(attributes: Attributes): this {
    for (const key in attributes) if (Object.prototype.hasOwnProperty.call(attributes, key)) this.setAttribute(key, attributes[key]);
    return this;
  }

  addEvent(name: string, attributesOrTime?: Attributes | TimeInput, time?: TimeInput): this {
    if (this.ended) return this;
    if (isTimeInput(attributesOrTime)) {
      time = isTimeInput(time) ? time : attributesOrTime;
      attributesOrTime = undefined;
    }
    if (this.events.length >= LIMIT) {
      this.events.shift();
      this.droppedEventsCount++;
    }
    const [attributes, droppedAttributesCount] = limited(attributesOrTime);
    this.events.push({ name, attributes, time: this.time(time), droppedAttributesCount });
    return this;
  }

  addLink(link: Link): this {
    if (this.ended) return this;
    if (this.links.length >= LIMIT) {
      this.links.shift();
      this.droppedLinksCount++;
    }
    const [attributes, droppedAttributesCount] = limited(link.attributes);
    const kept: Link & { droppedAttributesCount?: number } = { context: link.context };
    if (Object.keys(attributes).length > 0) kept.attributes = attributes;
    if (droppedAttributesCount > 0) kept.droppedAttributesCount = droppedAttributesCount;
    this.links.push(kept);
    return this;
  }

  addLinks(links: Link[]): this {
    for (const link of links) this.addLink(link);
    return this;
  }

  setStatus(status: SpanStatus): this {
    if (this.ended || status.code === SpanStatusCode.UNSET || this.status.code === SpanStatusCode.OK) return this;
    this.status = status.code === SpanStatusCode.ERROR && typeof status.message === 'string' ? { code: status.code, message: status.message } : { code: status.code };
    return this;
  }

  updateName(name: string): this {
    if (!this.ended) this.name = name;
    return this;
  }

  /** As the SDK records it: type (a code, else the name), message and stack, as an `exception` event. */
  recordException(exception: Exception, time?: TimeInput): void {
    const attributes: Attributes = {};
    if (typeof exception === 'string') attributes['exception.message'] = exception;
    else if (exception) {
      if (exception.code) attributes['exception.type'] = exception.code.toString();
      else if (exception.name) attributes['exception.type'] = exception.name;
      if (exception.message) attributes['exception.message'] = exception.message;
      if (exception.stack) attributes['exception.stacktrace'] = exception.stack;
    }
    if (attributes['exception.type'] || attributes['exception.message']) this.addEvent('exception', attributes, time);
    else diag.warn('Failed to record an exception: it has neither a type nor a message');
  }

  /**
   * A time as the SDK span reads it: epoch ms, a performance.now() reading (moved to Date's
   * clock), a Date, an HrTime. None: Date.now() when the start was given (a root), else the start
   * plus the performance clock's elapsed time, so a child's times do not follow Date's steps.
   */
  private time(time: TimeInput | undefined): HrTime {
    if (typeof time === 'number') return time <= otperformance.now() ? hrTime(time + this.perfOffset) : millisToHrTime(time);
    if (time instanceof Date) return millisToHrTime(time.getTime());
    if (isTimeInputHrTime(time)) return time;
    if (this.startGiven) return millisToHrTime(Date.now());
    return addHrTimes(this.startTime, millisToHrTime(otperformance.now() - this.perfStart));
  }

  end(time?: TimeInput): void {
    if (this.ended) return diag.error(`${this.name} ${this.context.traceId}-${this.context.spanId} - You can only call end() on a span once.`);
    this.endTime = this.time(time);
    this.ended = true;
    if (this.duration[0] < 0) this.endTime = this.startTime; // clocks disagree: a zero duration, as the SDK makes it
    this.sink.onEnd(this);
  }
}

/** An event's or link's valid attributes, up to the default count, and how many were dropped. */
function limited(attributes: Attributes | undefined): [Attributes, number] {
  const sanitized = sanitizeAttributes(attributes);
  const kept: Attributes = {};
  let count = 0;
  let dropped = 0;
  for (const key in sanitized) {
    if (!Object.prototype.hasOwnProperty.call(sanitized, key)) continue;
    if (count >= LIMIT) dropped++;
    else {
      kept[key] = sanitized[key];
      count++;
    }
  }
  return [kept, dropped];
}
