/**
 * Frees host copies between uploads. A host array of a few hundred MB that
 * is dropped stays in memory until V8's next full GC, which a streaming load
 * may not trigger before it builds the next array: the peak would then hold
 * several dead copies. After each large upload we ask for a full GC; where
 * that is not available the load still works, only with a higher peak.
 */
import * as v8 from 'node:v8';
import * as vm from 'node:vm';

let collect: (() => void) | null | undefined;

function collector(): (() => void) | null {
  if (collect !== undefined) return collect;
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (typeof exposed === 'function') return (collect = exposed);
  try {
    // The flag makes `gc` exist in contexts created from now on; the main context is left as it was.
    v8.setFlagsFromString('--expose-gc');
    const fn = vm.runInNewContext('gc') as unknown;
    collect = typeof fn === 'function' ? (fn as () => void) : null;
  } catch {
    collect = null;
  }
  return collect;
}

/** Host arrays at least this large are worth a full GC once dropped. */
export const RELEASE_BYTES = 64 * 2 ** 20;

/** Runs a full GC so that the host copies just dropped are freed now. */
export function releaseHostCopies(): void {
  collector()?.();
}
