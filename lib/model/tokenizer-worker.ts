/**
 * A worker thread of the tokenizer pool (tokenizer-pool.ts): builds its own
 * Tokenizer from the main thread's source, then answers each message
 * `{ id, texts }` with `{ id, ids }` (one Int32Array per text, transferred)
 * or `{ id, error }`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Tokenizer } from './tokenizer';

interface Job {
  readonly id: number;
  readonly texts: readonly string[];
}

const port = parentPort;
if (port === null) throw new Error('tokenizer-worker runs as a worker thread only');
const source = workerData as Tokenizer['source'];
const tokenizer = new Tokenizer(source.json, source.options);

port.on('message', (job: Job) => {
  try {
    const ids = job.texts.map((text) => Int32Array.from(tokenizer.encode(text)));
    port.postMessage(
      { id: job.id, ids },
      ids.map((a) => a.buffer),
    );
  } catch (error) {
    const e = error as Error;
    port.postMessage({ id: job.id, error: { name: e.name, message: e.message } });
  }
});
