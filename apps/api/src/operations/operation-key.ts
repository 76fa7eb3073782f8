import { type BulkAction, type BulkChange, type BulkFilter, validateKey } from '@almanac/domain';
import type { BulkOperationRecord } from '@almanac/persistence';
import { ApiError, conflict, invalid } from '../http/api-error';
import { isPlainObject, Issues } from '../http/validation';

/**
 * A bulk request's optional `key`, taken off the body before `parse` (bulk-input) reads the
 * rest; a bad key and bad other fields are one 400 naming them all.
 */
export function parseWithKey<T>(body: unknown, parse: (rest: unknown) => T): { key: string | null; input: T } {
  if (!isPlainObject(body) || body.key === undefined) return { key: null, input: parse(body) };
  const { key: raw, ...rest } = body;
  const issues = new Issues();
  const key = issues.run(() => validateKey(raw, 'key'));
  let input: T;
  try {
    input = parse(rest);
  } catch (err) {
    if (err instanceof ApiError && err.status === 400) throw invalid([...issues.list, ...err.details]);
    throw err;
  }
  if (key === undefined) throw invalid(issues.list);
  return { key, input };
}

/** 409 when `key` already names an operation that asked for something else (as a job's key does). */
export function assertSameRequest(op: BulkOperationRecord, action: BulkAction, filter: BulkFilter, change: BulkChange | null): void {
  const fields: string[] = [];
  if (op.action !== action) fields.push('action');
  if (!sameFilter(op.filter, filter)) fields.push('filter');
  if (instant(runAtOf(op.change)) !== instant(runAtOf(change))) fields.push('runAt');
  if (shiftOf(op.change) !== shiftOf(change)) fields.push('shiftBySeconds');
  if (fields.length > 0) throw conflict(`key "${op.key}" already names an operation with a different ${fields.join(', ')}`, 'key', 'conflict');
}

function sameFilter(a: BulkFilter, b: BulkFilter): boolean {
  return a.kind === b.kind && a.keyPrefix === b.keyPrefix && a.state === b.state
    && instant(a.runAtFrom) === instant(b.runAtFrom) && instant(a.runAtTo) === instant(b.runAtTo);
}

function runAtOf(c: BulkChange | null): Date | undefined {
  return c && 'runAt' in c ? c.runAt : undefined;
}

function shiftOf(c: BulkChange | null): number | undefined {
  return c && 'shiftBySeconds' in c ? c.shiftBySeconds : undefined;
}

function instant(d: Date | undefined): number | undefined {
  return d?.getTime();
}
