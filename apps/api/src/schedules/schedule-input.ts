import {
  DEFAULT_MISSED_POLICY,
  parseMissedPolicy,
  parseSchedule,
  type MissedPolicy,
  type Schedule,
  validateKey,
  validateTimezone,
} from '@almanac/domain';
import type { ApiSettings } from '../api-settings';
import { checkPayload, intInRange, isPlainObject, Issues, jsonEqual, rejectUnknown } from '../http/validation';
import type { Parsed } from '../jobs/job-input';
import { checkKind, checkKindPayload, type KindLookup } from '../kinds/kind-check';
import { MAX_ATTEMPTS_LIMIT } from '../jobs/job-input';

export interface ScheduleInput {
  key: string;
  kind: string;
  schedule: Schedule;
  payload: unknown;
  /** The payload's size as JSON text, in bytes (0 when absent): what it adds to the tenant's stored bytes. */
  payloadBytes: number;
  missed: MissedPolicy;
  maxAttempts: number;
  /** Each run should start within this many seconds of its due instant; null: no expectation. */
  expectWithinSeconds: number | null;
}

export type SchedulePatch = Partial<Omit<ScheduleInput, 'key' | 'schedule'>> & { cron?: string; timezone?: string };

const CREATE_FIELDS = ['key', 'kind', 'cron', 'timezone', 'payload', 'missed', 'maxAttempts', 'expectWithinSeconds'];
const PATCH_FIELDS = ['kind', 'cron', 'timezone', 'payload', 'missed', 'maxAttempts', 'expectWithinSeconds'];
/** At most a day: a run expected later than that is a job of its own, not a schedule's. */
export const MAX_EXPECT_WITHIN_SECONDS = 86_400;

/** null or 1..MAX_EXPECT_WITHIN_SECONDS. */
function expectWithin(raw: unknown, issues: Issues): number | null | undefined {
  if (raw === null) return null;
  return intInRange(raw, 'expectWithinSeconds', 1, MAX_EXPECT_WITHIN_SECONDS, issues);
}

/** Validates cron and zone together so a request with both wrong hears about both. */
function checkTiming(cron: unknown, timezone: unknown, issues: Issues): Schedule | undefined {
  const zone = issues.run(() => validateTimezone(timezone));
  const schedule = issues.run(() => parseSchedule(cron, zone ?? 'UTC'));
  return zone === undefined ? undefined : schedule;
}

export function parseScheduleCreate(raw: unknown, settings: ApiSettings, kinds: KindLookup): Parsed<ScheduleInput> {
  const issues = new Issues();
  if (!isPlainObject(raw)) {
    issues.add('body', 'type', 'body must be a JSON object');
    return { ok: false, issues: issues.list };
  }
  rejectUnknown(raw, CREATE_FIELDS, issues);
  for (const f of ['key', 'kind', 'cron', 'timezone']) {
    if (raw[f] === undefined) issues.add(f, 'required', `${f} is required`);
  }
  const key = raw.key === undefined ? undefined : issues.run(() => validateKey(raw.key));
  const kind = raw.kind === undefined ? undefined : checkKind(raw.kind, kinds, issues);
  const schedule = raw.cron === undefined || raw.timezone === undefined ? undefined : checkTiming(raw.cron, raw.timezone, issues);
  const missed = raw.missed === undefined ? DEFAULT_MISSED_POLICY : issues.run(() => parseMissedPolicy(raw.missed));
  const maxAttempts =
    raw.maxAttempts === undefined ? settings.defaultMaxAttempts : intInRange(raw.maxAttempts, 'maxAttempts', 1, MAX_ATTEMPTS_LIMIT, issues);
  const sized = issues.list.length;
  const payloadBytes = checkPayload(raw.payload, 'payload', settings.maxPayloadBytes, issues);
  if (kind && issues.list.length === sized) checkKindPayload(kind, raw.payload, kinds, issues);
  const expectWithinSeconds = raw.expectWithinSeconds === undefined ? null : expectWithin(raw.expectWithinSeconds, issues);
  if (!issues.ok || !key || !kind || !schedule || !missed || !maxAttempts || expectWithinSeconds === undefined) return { ok: false, issues: issues.list };
  return { ok: true, value: { key, kind, schedule, payload: raw.payload ?? null, payloadBytes, missed, maxAttempts, expectWithinSeconds } };
}

/**
 * A PATCH body; cron/timezone are checked against the stored ones by the caller (parseTiming),
 * and so is a payload sent without a kind (checkPatchedPayload).
 */
export function parseSchedulePatch(raw: unknown, settings: ApiSettings, kinds: KindLookup): Parsed<SchedulePatch> {
  const issues = new Issues();
  if (!isPlainObject(raw)) {
    issues.add('body', 'type', 'body must be a JSON object');
    return { ok: false, issues: issues.list };
  }
  rejectUnknown(raw, PATCH_FIELDS, issues);
  const patch: SchedulePatch = {};
  if (raw.kind !== undefined) patch.kind = checkKind(raw.kind, kinds, issues);
  if (raw.cron !== undefined) {
    if (typeof raw.cron === 'string') patch.cron = raw.cron;
    else issues.add('cron', 'type', 'cron must be a string');
  }
  if (raw.timezone !== undefined) patch.timezone = issues.run(() => validateTimezone(raw.timezone));
  if (raw.missed !== undefined) patch.missed = issues.run(() => parseMissedPolicy(raw.missed));
  if (raw.maxAttempts !== undefined) patch.maxAttempts = intInRange(raw.maxAttempts, 'maxAttempts', 1, MAX_ATTEMPTS_LIMIT, issues);
  if (raw.expectWithinSeconds !== undefined) patch.expectWithinSeconds = expectWithin(raw.expectWithinSeconds, issues);
  if (raw.payload !== undefined) {
    patch.payloadBytes = checkPayload(raw.payload, 'payload', settings.maxPayloadBytes, issues);
    patch.payload = raw.payload;
  }
  if (!issues.ok) return { ok: false, issues: issues.list };
  return { ok: true, value: patch };
}

/** The payload a PATCH leads to (new payload and kind over the stored ones) against that kind's schema. */
export function checkPatchedPayload(kind: string, payload: unknown, kinds: KindLookup): Parsed<unknown> {
  const issues = new Issues();
  checkKindPayload(kind, payload, kinds, issues);
  return issues.ok ? { ok: true, value: payload } : { ok: false, issues: issues.list };
}

/** Parses the timing a PATCH leads to (new cron/zone over the stored ones). */
export function parseTiming(cron: string, timezone: string): Parsed<Schedule> {
  const issues = new Issues();
  const schedule = checkTiming(cron, timezone, issues);
  return schedule && issues.ok ? { ok: true, value: schedule } : { ok: false, issues: issues.list };
}

interface StoredSchedule {
  kind: string;
  cron: string;
  timezone: string;
  payload: unknown;
  missed: string;
  maxAttempts: number;
  expectWithinSeconds: number | null;
}

export function scheduleDiffers(stored: StoredSchedule, input: ScheduleInput): string[] {
  const diff: string[] = [];
  if (stored.kind !== input.kind) diff.push('kind');
  if (stored.cron !== input.schedule.cron) diff.push('cron');
  if (stored.timezone !== input.schedule.timezone) diff.push('timezone');
  if (!jsonEqual(stored.payload ?? null, input.payload ?? null)) diff.push('payload');
  if (stored.missed !== input.missed) diff.push('missed');
  if (stored.maxAttempts !== input.maxAttempts) diff.push('maxAttempts');
  if (stored.expectWithinSeconds !== input.expectWithinSeconds) diff.push('expectWithinSeconds');
  return diff;
}

/** `2026-11-30T10:00:00+01:00`: the instant as wall-clock time in `timezone`. */
export function formatInZone(at: Date, timezone: string): string {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: timezone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(at);
  const get = (t: string) => Number(parts.find((p) => p.type === t)?.value ?? 0);
  const wall = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'));
  const offsetMin = Math.round((wall - Math.floor(at.getTime() / 1000) * 1000) / 60_000);
  const sign = offsetMin < 0 ? '-' : '+';
  const abs = Math.abs(offsetMin);
  const pad = (n: number) => String(n).padStart(2, '0');
  const iso = new Date(wall).toISOString().slice(0, 19);
  return `${iso}${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}
