/**
 * The programs a weight load runs (decoding the file's blocks on the device,
 * joining layer pieces) through a JIT cache with the disk cache on: a
 * restarted service reads them from disk instead of compiling them, which
 * is most of what makes its first answer fast. The cache lives for one load;
 * the disk keeps the executables.
 */
import { LoadPrograms } from '../../device-weights/upload';
import { Client } from '../../runtime/client';
import { Executable } from '../../runtime/executable';
import type { XlaOptions } from '../../runtime/xla-options';
import { clientCompiler } from './compiler';
import { JitCache } from './jit-cache';

interface LoadProgramCache {
  readonly programs: LoadPrograms;
  /** Frees the executables (after the load); waits for background disk writes first. */
  close(): Promise<void>;
}

/** `xlaOptions`: what the load's programs compile with, the Scorer's (its programs' namespace too). */
export function loadProgramCache(
  client: Client,
  disk: boolean | string,
  xlaOptions: XlaOptions = {},
): LoadProgramCache {
  const jit = new JitCache<Executable>(clientCompiler(client, { xlaOptions }), { disk, maxEntries: 32 });
  return {
    // Keyed by the text's hash: the name alone does not carry the model's dims.
    programs: async (program) => {
      const lease = await jit.acquire({ program: program.name, model: program.hash, dims: {} }, () => program.text);
      return { executable: lease.executable, release: () => lease.release() };
    },
    close: async () => {
      await jit.flush();
      jit.dispose();
    },
  };
}
