'use strict';
// The client shared by the native targets (one per worker process), and the
// errors a caller may get from the runtime facade.
const path = require('node:path');
const { DIST } = require('./common');

const runtime = require(path.join(DIST, 'runtime'));
let client = null;

async function sharedClient() {
  if (!client) client = await runtime.Client.create();
  return client;
}

/** Clean refusals: the facade's own checks (TypeError, RangeError) and the plugin's status (PjrtError). */
function expected(error) {
  if (error instanceof runtime.PjrtError) return true;
  // Engine errors (a bug in our code, not a refusal) are TypeErrors too; they never start like our messages.
  if (error instanceof TypeError || error instanceof RangeError) {
    return !/^(Cannot read|Cannot convert|.* is not (a function|iterable|defined)|Invalid (array|typed array) length|Maximum call stack)/.test(
      error.message,
    );
  }
  return false;
}

module.exports = { runtime, sharedClient, expected };
