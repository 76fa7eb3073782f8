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
    'decideAfterSnooze',
    'completed',
    'retry',
    'snooze',
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
    'isJobState',
  ])('exports %s', (name) => {
    expect((domain as Record<string, unknown>)[name]).toBeDefined();
  });

  // The job-state transition table went in #13: the guarded UPDATEs in libs/persistence are the authority.
  it.each(['JOB_TRANSITIONS', 'TERMINAL_STATES', 'canTransition', 'assertTransition', 'IllegalTransitionError', 'decideAfterOutcome'])('no longer exports %s', (name) => {
    expect(name in domain).toBe(false);
  });
});
