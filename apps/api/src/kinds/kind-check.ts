import { type PayloadProblem, PayloadSchemaError } from '@almanac/kinds';
import { validateKind } from '@almanac/domain';
import { unavailable } from '../http/api-error';
import type { Issues } from '../http/validation';

/** What validation needs of the kind registry (KindCatalog). */
export interface KindLookup {
  get(kind: string): object | undefined;
  kinds(): string[];
  checkPayload(kind: string, payload: unknown): PayloadProblem[];
}

/** A well-formed, registered kind, or `undefined` and an issue listing the registered ones. */
export function checkKind(raw: unknown, kinds: KindLookup, issues: Issues): string | undefined {
  const kind = issues.run(() => validateKind(raw));
  if (kind === undefined || kinds.get(kind)) return kind;
  issues.add('kind', 'unknown_kind', `kind "${kind}" is not registered (known: ${kinds.kinds().join(', ')})`);
  return undefined;
}

/**
 * Checks `payload` against the kind's registered schema; each problem becomes an issue naming its
 * field. A registered schema the API cannot compile is no fault of the request: 503, naming the
 * kind, until a worker registers one that compiles.
 */
export function checkKindPayload(kind: string, payload: unknown, kinds: KindLookup, issues: Issues): void {
  let problems: PayloadProblem[];
  try {
    problems = kinds.checkPayload(kind, payload ?? null);
  } catch (err) {
    if (!(err instanceof PayloadSchemaError)) throw err;
    throw unavailable(`kind "${kind}": its registered ${err.message}`, SCHEMA_RETRY_AFTER_S);
  }
  for (const p of problems) issues.add(p.field, p.rule, p.message);
}

/** A registered schema changes when a worker asserts another (every 30 s at most). */
const SCHEMA_RETRY_AFTER_S = 30;
