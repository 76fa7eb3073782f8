// @ts-check
'use strict';
// One voice for the start script: short lines prefixed so they stand apart from the app's JSON logs.

const PREFIX = '[almanac]';

/** @param {string} msg */
function info(msg) {
  process.stdout.write(`${PREFIX} ${msg}\n`);
}

/** @param {string} msg */
function warn(msg) {
  process.stderr.write(`${PREFIX} warning: ${msg}\n`);
}

/** An error the user can act on: printed without a stack trace. */
class StartError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = 'StartError';
  }
}

/**
 * The message of anything caught: `catch (err)` gives `unknown`, and a rejection need not be an Error.
 * @param {unknown} err
 * @returns {string}
 */
function errorMessage(err) {
  return err instanceof Error ? err.message : String(err);
}

module.exports = { info, warn, StartError, errorMessage };
