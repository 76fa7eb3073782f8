import type { AttributeValue, Attributes, Link, SpanContext } from '@opentelemetry/api';
import type { InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace-node';
import { ProtoWriter } from './proto-writer';

/**
 * OTLP's protobuf messages (opentelemetry/proto/trace/v1/trace.proto), field for field as
 * `@opentelemetry/otlp-transformer` 0.223 writes them, so a span can be written the moment it
 * ends, while it is still in the CPU's cache, and the batch only frames the bytes
 * (docs/decisions/2026-12-05-tracing-cost.md).
 */
const HAS_IS_REMOTE = 0x100;
const IS_REMOTE = 0x200;

/** One Span message, as field 2 of a ScopeSpans. */
export function writeSpan(w: ProtoWriter, span: ReadableSpan): void {
  const at = w.begin(2);
  const ctx = span.spanContext();
  w.hex(1, ctx.traceId);
  w.hex(2, ctx.spanId);
  const traceState = ctx.traceState?.serialize();
  if (traceState) stringField(w, 3, traceState);
  if (span.parentSpanContext?.spanId) w.hex(4, span.parentSpanContext.spanId);
  stringField(w, 5, span.name);
  const kind = span.kind == null ? 0 : span.kind + 1; // the API has no "unspecified"
  if (kind !== 0) varintField(w, 6, kind);
  w.tag(7, 1);
  w.hrTime(span.startTime);
  w.tag(8, 1);
  w.hrTime(span.endTime);
  writeAttributes(w, 9, span.attributes);
  varintField(w, 10, span.droppedAttributesCount);
  for (const event of span.events) writeEvent(w, event);
  varintField(w, 12, span.droppedEventsCount);
  for (const link of span.links) writeLink(w, link);
  varintField(w, 14, span.droppedLinksCount);
  const status = w.begin(15);
  if (span.status.message) stringField(w, 2, span.status.message);
  varintField(w, 3, span.status.code);
  w.end(status);
  w.tag(16, 5);
  w.fixed32(flags(ctx.traceFlags, span.parentSpanContext?.isRemote));
  w.end(at);
}

/** An ExportTraceServiceRequest's ResourceSpans (field 1) around ScopeSpans whose spans are already written. */
export function writeResourceSpans(w: ProtoWriter, resource: Resource, scopes: Iterable<[InstrumentationScope, Uint8Array]>): void {
  const at = w.begin(1);
  const res = w.begin(1);
  writeAttributes(w, 1, resource.attributes);
  varintField(w, 2, 0);
  w.end(res);
  for (const [scope, spans] of scopes) {
    const scopeSpans = w.begin(2);
    const s = w.begin(1);
    stringField(w, 1, scope.name);
    if (scope.version) stringField(w, 2, scope.version);
    const { attributes, droppedAttributesCount } = scope as { attributes?: Attributes; droppedAttributesCount?: number };
    writeAttributes(w, 3, attributes);
    if (droppedAttributesCount) varintField(w, 4, droppedAttributesCount);
    w.end(s);
    w.raw(spans); // whole Span fields, tag and length included
    if (scope.schemaUrl) stringField(w, 3, scope.schemaUrl);
    w.end(scopeSpans);
  }
  if (resource.schemaUrl) stringField(w, 3, resource.schemaUrl);
  w.end(at);
}

function writeEvent(w: ProtoWriter, event: TimedEvent): void {
  const at = w.begin(11);
  w.tag(1, 1);
  w.hrTime(event.time);
  stringField(w, 2, event.name);
  writeAttributes(w, 3, event.attributes);
  varintField(w, 4, event.droppedAttributesCount || 0);
  w.end(at);
}

function writeLink(w: ProtoWriter, link: Link & { droppedAttributesCount?: number }): void {
  const at = w.begin(13);
  const ctx: SpanContext = link.context;
  w.hex(1, ctx.traceId);
  w.hex(2, ctx.spanId);
  const traceState = ctx.traceState?.serialize();
  if (traceState) stringField(w, 3, traceState);
  writeAttributes(w, 4, link.attributes);
  varintField(w, 5, link.droppedAttributesCount || 0);
  w.tag(6, 5);
  w.fixed32(flags(ctx.traceFlags, ctx.isRemote));
  w.end(at);
}

function writeAttributes(w: ProtoWriter, field: number, attributes: Attributes | undefined): void {
  if (!attributes) return;
  for (const key in attributes) {
    if (!Object.prototype.hasOwnProperty.call(attributes, key)) continue;
    const kv = w.begin(field);
    writeKey(w, key);
    const value = w.begin(2);
    writeAnyValue(w, attributes[key]);
    w.end(value);
    w.end(kv);
  }
}

/** AnyValue: a string, bool, int64 (whole numbers in range), double, bytes, an array or a map of them. */
function writeAnyValue(w: ProtoWriter, value: AttributeValue | Uint8Array | Attributes | undefined | null): void {
  if (typeof value === 'string') stringField(w, 1, value);
  else if (typeof value === 'boolean') varintField(w, 2, value ? 1 : 0);
  else if (typeof value === 'number') {
    if (Number.isInteger(value) && value >= -(2 ** 63) && value < 2 ** 63) varintField(w, 3, value);
    else {
      w.tag(4, 1);
      w.double(value);
    }
  } else if (value instanceof Uint8Array) {
    w.tag(7, 2);
    w.bytes(value);
  } else if (Array.isArray(value)) {
    const array = w.begin(5);
    for (const item of value as unknown[]) {
      const v = w.begin(1);
      writeAnyValue(w, item as AttributeValue);
      w.end(v);
    }
    w.end(array);
  } else if (typeof value === 'object' && value !== null) {
    const map = w.begin(6); // a resource's attributes are not checked as a span's are: a map can come
    writeAttributes(w, 1, value);
    w.end(map);
  }
}

/**
 * Attribute keys are few and repeat in every span: each is encoded once, up to KEYS keys of up to
 * 127 characters (a length of one byte); others are written as any string is.
 */
const KEYS = 1024;
const keyFields = new Map<string, Uint8Array>();

/** A KeyValue's key field (1), from the cache when it can be. */
function writeKey(w: ProtoWriter, key: string): void {
  const cached = keyFields.get(key);
  if (cached) return w.raw(cached);
  if (key.length > 127 || keyFields.size >= KEYS) return stringField(w, 1, key);
  const at = w.pos;
  stringField(w, 1, key);
  keyFields.set(key, w.buf.slice(at, w.pos));
}

function stringField(w: ProtoWriter, field: number, value: string): void {
  w.tag(field, 2);
  w.string(value);
}

function varintField(w: ProtoWriter, field: number, value: number): void {
  w.tag(field, 0);
  w.varint(value);
}

function flags(traceFlags: number, isRemote: boolean | undefined): number {
  return (traceFlags & 0xff) | HAS_IS_REMOTE | (isRemote ? IS_REMOTE : 0);
}
