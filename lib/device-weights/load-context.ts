/**
 * What one weight load carries through its steps: the client, the reader,
 * the weight type, the programs it runs (decodes, joins), the scratch
 * memory raw rows are read into, and the clock that times each step.
 */
import { HloProgram, WeightType } from '../hlo';
import { WeightReader } from '../model/weights-reader';
import { Client } from '../runtime/client';
import { DeviceBuffer } from '../runtime/device-buffer';
import { Executable } from '../runtime/executable';

export type Step = 'read' | 'convert' | 'upload' | 'program';

export class Clock {
  read = 0;
  convert = 0;
  upload = 0;
  program = 0;
  time<T>(step: Step, run: () => T): T {
    const start = performance.now();
    try {
      return run();
    } finally {
      this[step] += (performance.now() - start) / 1000;
    }
  }
  async timeAsync<T>(step: Step, run: () => Promise<T>): Promise<T> {
    const start = performance.now();
    try {
      return await run();
    } finally {
      this[step] += (performance.now() - start) / 1000;
    }
  }
}

/**
 * Loads a program the load itself runs (decoding, joining layers) and hands
 * it back until released. The Scorer passes its disk-cached JIT, so a
 * restart reads them from disk; the default compiles each time.
 */
export type LoadPrograms = (program: HloProgram) => Promise<{ readonly executable: Executable; release(): void }>;

export function compileEachTime(client: Client): LoadPrograms {
  return async (program) => {
    const executable = await client.compile(program.text);
    return { executable, release: () => executable.dispose() };
  };
}

/** One device array (or layer piece of one), and its scales for an int8 matrix. */
export interface OnDevice {
  readonly data: DeviceBuffer;
  readonly scales?: DeviceBuffer;
}

export function disposeAll(...arrays: (OnDevice | undefined)[]): void {
  for (const a of arrays) {
    a?.data.dispose();
    a?.scales?.dispose();
  }
}

export interface Load {
  readonly client: Client;
  readonly reader: WeightReader;
  readonly type: WeightType;
  readonly programs: LoadPrograms;
  readonly clock: Clock;
  readonly assembleBytes: number;
  /**
   * Host memory for raw rows, reused: fresh arrays cost page faults and
   * count as external memory, which made V8 run extra full collections.
   */
  scratch(bytes: number): Uint8Array;
}

export function scratchMemory(): (bytes: number) => Uint8Array {
  let buffer = new Uint8Array(0);
  return (bytes) => {
    if (buffer.byteLength < bytes) buffer = new Uint8Array(bytes);
    return buffer.subarray(0, bytes);
  };
}
