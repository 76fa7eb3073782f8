import { describeValue, LATEST_RUN_AT_MS, parseRunAt, validateKey } from '@almanac/domain';
import type { ApiSettings } from '../api-settings';
import type { FieldIssue } from '../http/api-error';
import { checkKind, checkKindPayload, type KindLookup } from '../kinds/kind-check';
import { checkPayload, intInRange, isPlainObject, Issues, jsonEqual, oneOf, rejectUnknown } from '../http/validation';

/** A job request that passed validation. */
export interface JobInput {
  kind: string;
  key: string;
  runAt: Date;
  /** `null` when absent. */
  payload: unknown;
  /** The payload's size as JSON text, in bytes (0 when absent): what it adds to the tenant's stored bytes. */
  payloadBytes: number;
  maxAttempts: number;
  /** What a replay of a key whose job retention removed answers: 409 (`conflict`) or 200 with what the key keeps (`result`). */
  replay: ReplayMode;
}

export const REPLAY_MODES = ['conflict', 'result'] as const;
export type ReplayMode = (typeof REPLAY_MODES)[number];

export type Parsed<T> = { ok: true; value: T } | { ok: false; issues: FieldIssue[] };

const JOB_FIELDS = ['kind', 'key', 'runAt', 'payload', 'maxAttempts', 'replay'] as const;
export const MAX_ATTEMPTS_LIMIT = 100;
/** Run times outside 1970..9999 are typos, not plans (and stay inside Postgres' and JS' range). */
const EARLIEST_RUN_AT = 0;
const LATEST_RUN_AT = LATEST_RUN_AT_MS;

/** parseRunAt plus the range check; `undefined` (and an issue) when it fails. */
export function runAtIn(raw: unknown, field: string, issues: Issues): Date | undefined {
  const runAt = issues.run(() => parseRunAt(raw, field));
  if (runAt && (runAt.getTime() < EARLIEST_RUN_AT || runAt.getTime() > LATEST_RUN_AT)) {
    issues.add(field, 'out_of_range', `${field} must be between 1970-01-01 and 9999-12-31`);
    return undefined;
  }
  return runAt;
}

/**
 * Validates one job request body, reporting every bad field at once. The kind must be in the
 * registry, and the payload must match the kind's registered schema. Hand-written rather than
 * class-validator: it runs for every item of 1000-job batches on the ingest hot path, and each
 * refusal must name the field and a stable rule.
 */
export function parseJobInput(raw: unknown, settings: ApiSettings, kinds: KindLookup, prefix = ''): Parsed<JobInput> {
  const issues = new Issues(prefix);
  if (!isPlainObject(raw)) {
    issues.add('job', 'type', `job must be a JSON object, got ${describeValue(raw)}`);
    return { ok: false, issues: issues.list };
  }
  rejectUnknown(raw, JOB_FIELDS, issues);
  const kind = raw.kind === undefined ? missing(issues, 'kind') : checkKind(raw.kind, kinds, issues);
  const key = raw.key === undefined ? missing(issues, 'key') : issues.run(() => validateKey(raw.key));
  const runAt = raw.runAt === undefined ? missing(issues, 'runAt') : runAtIn(raw.runAt, 'runAt', issues);
  const maxAttempts =
    raw.maxAttempts === undefined
      ? settings.defaultMaxAttempts
      : intInRange(raw.maxAttempts, 'maxAttempts', 1, MAX_ATTEMPTS_LIMIT, issues);
  const replay = raw.replay === undefined ? 'conflict' : oneOf(raw.replay, 'replay', REPLAY_MODES, issues);
  const sized = issues.list.length;
  const payloadBytes = checkPayload(raw.payload, 'payload', settings.maxPayloadBytes, issues);
  if (kind !== undefined && issues.list.length === sized) checkKindPayload(kind, raw.payload, kinds, issues);
  if (!issues.ok || kind === undefined || key === undefined || runAt === undefined || maxAttempts === undefined || replay === undefined) {
    return { ok: false, issues: issues.list };
  }
  return { ok: true, value: { kind, key, runAt, payload: raw.payload ?? null, payloadBytes, maxAttempts, replay } };
}

function missing(issues: Issues, field: string): undefined {
  issues.add(field, 'required', `${field} is required`);
  return undefined;
}

/** What an idempotent replay compares with the stored job. */
export interface StoredJobBody {
  kind: string;
  runAt: Date;
  payload: unknown;
  attempts: number;
}

/**
 * Fields in which a replayed request differs from the job its key already names. The run time
 * is compared only while the job has never been attempted: a retry moves `run_at`, and a replay
 * of the original request must still find "its" job then. A reschedule before the first attempt
 * does make the original request differ (409, docs/api.md): the original run time is not stored.
 */
export function differingFields(stored: StoredJobBody, input: JobInput): string[] {
  const diff: string[] = [];
  if (stored.kind !== input.kind) diff.push('kind');
  if (stored.attempts === 0 && stored.runAt.getTime() !== input.runAt.getTime()) diff.push('runAt');
  if (!jsonEqual(stored.payload ?? null, input.payload ?? null)) diff.push('payload');
  return diff;
}
