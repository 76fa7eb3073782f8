import { BULK_FILTER_FIELDS, BULK_JOB_STATES, type BulkChange, type BulkFilter, type BulkJobState, MAX_SHIFT_SECONDS, validateKeyFormat, validateKind } from '@almanac/domain';
import { invalid } from '../http/api-error';
import { intInRange, isPlainObject, Issues, rejectUnknown } from '../http/validation';
import { runAtIn } from '../jobs/job-input';

/** POST /v1/jobs/bulk-cancel: `{"filter": {...}}`. Throws a 400 naming every bad field. */
export function parseBulkCancel(body: unknown): { filter: BulkFilter } {
  const issues = new Issues();
  const filter = bodyFilter(body, ['filter'], issues);
  if (!issues.ok || !filter) throw invalid(issues.list);
  return { filter };
}

/** POST /v1/jobs/bulk-reschedule: `{"filter": {...}, "runAt": ...}` or `{..., "shiftBySeconds": n}`. */
export function parseBulkReschedule(body: unknown): { filter: BulkFilter; change: BulkChange } {
  const issues = new Issues();
  const filter = bodyFilter(body, ['filter', 'runAt', 'shiftBySeconds'], issues);
  let change: BulkChange | undefined;
  if (isPlainObject(body)) {
    if ((body.runAt === undefined) === (body.shiftBySeconds === undefined)) {
      issues.add('runAt', 'one_of', 'give exactly one of runAt (an instant) and shiftBySeconds (seconds to move each job by)');
    } else if (body.runAt !== undefined) {
      const runAt = runAtIn(body.runAt, 'runAt', issues);
      if (runAt) change = { runAt };
    } else {
      const shift = intInRange(body.shiftBySeconds, 'shiftBySeconds', -MAX_SHIFT_SECONDS, MAX_SHIFT_SECONDS, issues);
      if (shift === 0) issues.add('shiftBySeconds', 'non_zero', 'shiftBySeconds must not be 0');
      else if (shift !== undefined) change = { shiftBySeconds: shift };
    }
  }
  if (!issues.ok || !filter || !change) throw invalid(issues.list);
  return { filter, change };
}

function bodyFilter(body: unknown, known: readonly string[], issues: Issues): BulkFilter | undefined {
  if (!isPlainObject(body)) {
    issues.add('body', 'type', 'body must be a JSON object {"filter": {...}}');
    return undefined;
  }
  rejectUnknown(body, known, issues);
  if (body.filter === undefined) {
    issues.add('filter', 'required', `filter is required: an object with at least one of ${BULK_FILTER_FIELDS.join(', ')}`);
    return undefined;
  }
  return parseFilter(body.filter, issues);
}

/**
 * At least one field: an operation over every job of a tenant is a mistake far more often than
 * a wish (and `{"state": "scheduled"}` still says it on purpose).
 */
function parseFilter(raw: unknown, outer: Issues): BulkFilter | undefined {
  const issues = new Issues('filter');
  const filter: BulkFilter = {};
  if (!isPlainObject(raw)) {
    outer.add('filter', 'type', `filter must be an object with at least one of ${BULK_FILTER_FIELDS.join(', ')}`);
    return undefined;
  }
  rejectUnknown(raw, BULK_FILTER_FIELDS, issues);
  if (Object.keys(raw).length === 0) outer.add('filter', 'empty', `filter must name at least one of ${BULK_FILTER_FIELDS.join(', ')}`);
  if (raw.kind !== undefined) filter.kind = issues.run(() => validateKind(raw.kind));
  // A prefix of any key, occurrences' (`schedule:42:`) included: a filter names no job.
  if (raw.keyPrefix !== undefined) filter.keyPrefix = issues.run(() => validateKeyFormat(raw.keyPrefix, 'keyPrefix'));
  if (raw.runAtFrom !== undefined) filter.runAtFrom = runAtIn(raw.runAtFrom, 'runAtFrom', issues);
  if (raw.runAtTo !== undefined) filter.runAtTo = runAtIn(raw.runAtTo, 'runAtTo', issues);
  if (filter.runAtFrom && filter.runAtTo && filter.runAtFrom >= filter.runAtTo) issues.add('runAtTo', 'after_from', 'runAtTo must be later than runAtFrom');
  if (raw.state !== undefined) {
    if ((BULK_JOB_STATES as readonly unknown[]).includes(raw.state)) filter.state = raw.state as BulkJobState;
    else issues.add('state', 'enum', `state must be one of ${BULK_JOB_STATES.join(', ')} (only jobs that have not started can change)`);
  }
  outer.list.push(...issues.list);
  return issues.ok ? filter : undefined;
}
