import { isTransientDependencyError } from '@almanac/platform';
import { DomainValidationError } from '@almanac/domain';
import { ApiError, invalid, unavailable } from './api-error';

/**
 * A failure the API answers on purpose, as the ApiError it answers with: its own refusals, a
 * domain rule's validation error, a database or queue not answering in time. Null for anything
 * else (a defect, answered 500). One home for this: the JSON error filter and the console's pages.
 */
export function expectedFailure(err: unknown): ApiError | null {
  if (err instanceof ApiError) return err;
  if (err instanceof DomainValidationError) return invalid([{ field: err.field, rule: err.rule, message: err.message }]);
  if (isTransientDependencyError(err)) {
    return unavailable('the database or the queue is not answering in time; retry shortly (a request with the same key is safe to resend)');
  }
  return null;
}
