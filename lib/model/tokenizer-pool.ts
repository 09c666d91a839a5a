/**
 * Tokenizing long texts off the main thread (docs/design.md "The service"):
 * a worker thread (tokenizer-worker.ts) holds its own copy of the
 * tokenizer, so the event loop keeps answering while a large request is
 * tokenized. One worker: the machine's other cores run the device's
 * passes. The worker keeps the process alive only while it has work, and
 * close() ends it (the Scorer's dispose() does).
 */
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { Tokenizer, TokenizerError } from './tokenizer';

interface Pending {
  readonly resolve: (ids: number[][]) => void;
  readonly reject: (error: Error) => void;
}

type Answer =
  | { readonly id: number; readonly ids: Int32Array[] }
  | { readonly id: number; readonly error: { readonly name: string; readonly message: string } };

export class TokenizerPool {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private serial = 0;
  private closed = false;
  /** Texts handed to the worker so far (tests count them). */
  textsSent = 0;

  constructor(private readonly source: Tokenizer['source']) {}

  /** The token ids of each text, as Tokenizer.encode gives them, computed on the worker thread. */
  encodeMany(texts: readonly string[]): Promise<number[][]> {
    if (this.closed) return Promise.reject(new Error('the tokenizer pool is closed'));
    const worker = this.started();
    const id = ++this.serial;
    this.textsSent += texts.length;
    return new Promise<number[][]>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      if (this.pending.size === 1) worker.ref();
      worker.postMessage({ id, texts });
    });
  }

  /** Ends the worker; calls still waiting reject. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = null;
    this.failAll(new Error('the tokenizer pool is closed'));
    if (worker) await worker.terminate();
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(path.join(__dirname, 'tokenizer-worker.js'), { workerData: this.source });
    worker.unref();
    worker.on('message', (answer: Answer) => this.answer(answer));
    worker.on('error', (error: Error) => this.failAll(error));
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = null;
      this.failAll(new Error('the tokenizer worker exited'));
    });
    this.worker = worker;
    return worker;
  }

  private answer(answer: Answer): void {
    const call = this.pending.get(answer.id);
    if (!call) return;
    this.pending.delete(answer.id);
    if (this.pending.size === 0) this.worker?.unref();
    if ('error' in answer) {
      const error =
        answer.error.name === 'TokenizerError'
          ? new TokenizerError(answer.error.message)
          : new Error(answer.error.message);
      call.reject(error);
    } else {
      call.resolve(answer.ids.map((a) => Array.from(a)));
    }
  }

  private failAll(error: Error): void {
    const calls = [...this.pending.values()];
    this.pending.clear();
    this.worker?.unref();
    for (const call of calls) call.reject(error);
  }
}
