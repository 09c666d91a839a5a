/**
 * lib/cli: the `pjrt-score` command line (serve, score, fetch); bin/pjrt-score.js
 * runs `main`. Nothing in lib/ imports it. May import: server (the service, its
 * options, backend and logger), wire, scoring (its index only), model, assets, util.
 */
export { main } from './main';
