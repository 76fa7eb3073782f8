import * as domain from './index';

describe('@almanac/domain public API', () => {
  it.each([
    // the shared contract (helpers brief)
    'tierFor',
    'DEFAULT_HORIZONS',
    'validateKey',
    'validateKind',
    'InvalidKeyError',
    'InvalidKindError',
    'DomainValidationError',
    'occurrenceKey',
    'retryDelayMs',
    'nextAttemptDecision',
    'parseSchedule',
    'InvalidCronError',
    'InvalidTimezoneError',
    'nextOccurrences',
    'occurrencesBetween',
    'planMissed',
    // and the rest
    'validateHorizons',
    'delayMs',
    'hotHorizonEnd',
    'parseRunAt',
    'InvalidRunAtError',
    'decideAfterFailure',
    'decideAfterOutcome',
    'completed',
    'retry',
    'discard',
    'isHandlerOutcome',
    'DEFAULT_RETRY_POLICY',
    'validateRetryPolicy',
    'planMaterialisation',
    'cursorBefore',
    'parseMissedPolicy',
    'MAX_MISSED_ALL',
    'validateTimezone',
    'JOB_STATES',
    'JOB_TRANSITIONS',
    'assertTransition',
    'canTransition',
    'IllegalTransitionError',
  ])('exports %s', (name) => {
    expect((domain as Record<string, unknown>)[name]).toBeDefined();
  });
});
