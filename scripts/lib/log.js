'use strict';
// One voice for the start script: short lines prefixed so they stand apart from the app's JSON logs.

const PREFIX = '[almanac]';

function info(msg) {
  process.stdout.write(`${PREFIX} ${msg}\n`);
}

function warn(msg) {
  process.stderr.write(`${PREFIX} warning: ${msg}\n`);
}

/** An error the user can act on: printed without a stack trace. */
class StartError extends Error {
  constructor(message) {
    super(message);
    this.name = 'StartError';
  }
}

module.exports = { info, warn, StartError };
