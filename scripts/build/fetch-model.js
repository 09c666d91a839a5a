#!/usr/bin/env node
'use strict';
// Fetch the default model (SmolLM2-135M-Instruct, GGUF Q4_1) into the cache (idempotent).
const { fetchDefaultModel } = require('../../dist/assets/model');

fetchDefaultModel().catch((err) => {
  console.error(`[pjrt-score] ${err.message}`);
  process.exit(1);
});
