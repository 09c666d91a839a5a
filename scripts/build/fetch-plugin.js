#!/usr/bin/env node
'use strict';
// Fetch the official XLA CPU PJRT plugin into the cache (idempotent).
// PJRT_PLUGIN_PATH, when set, makes this unnecessary.
const { fetchCpuPlugin } = require('../../dist/assets/plugin');

fetchCpuPlugin().catch((err) => {
  console.error(`[pjrt-score] ${err.message}`);
  process.exit(1);
});
