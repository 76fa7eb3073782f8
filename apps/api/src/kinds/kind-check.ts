import type { PayloadProblem } from '@almanac/kinds';
import { validateKind } from '@almanac/domain';
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

/** Checks `payload` against the kind's registered schema; each problem becomes an issue naming its field. */
export function checkKindPayload(kind: string, payload: unknown, kinds: KindLookup, issues: Issues): void {
  for (const p of kinds.checkPayload(kind, payload ?? null)) issues.add(p.field, p.rule, p.message);
}
