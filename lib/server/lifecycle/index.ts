/**
 * lib/server/lifecycle: the service's life around one Scorer: what the
 * routes need of the Scorer (scorer-backend.ts, a narrow structural type),
 * loading and warming it in the background (loading.ts), and the state the
 * routes read (service-state.ts: the phase loading -> ready -> [leaving ->]
 * draining -> closed, the requests in hand, the metrics).
 * May import: settings, telemetry.
 */
export { type BackendLoadOptions, type ScoringBackend } from './scorer-backend';
