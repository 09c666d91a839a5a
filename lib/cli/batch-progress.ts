/**
 * run-batch's progress: on a terminal, one bar redrawn in place (lines,
 * items/s, ETA from the input's bytes); elsewhere (a log, a pod), one JSON
 * line every `everyMs`. Both on stderr; stdout may carry the output.
 */

export interface BatchCounts {
  /** Lines answered by this run. */
  answered: number;
  /** Lines answered other than 2xx, by this run or (resume) the run before. */
  failed: number;
  /** Lines found already answered in the output (resume). */
  skipped: number;
  /** Items (documents) scored by the lines answered 2xx. */
  items: number;
}

interface ProgressSource {
  readonly counts: BatchCounts;
  /** Input bytes read so far, and the input's size when known (a file). */
  readonly bytesRead: () => number;
  readonly totalBytes: number | null;
}

export class BatchProgress {
  /** The clock starts with the first line (start()), not with the model's load. */
  private startedMs = performance.now();
  private timer: NodeJS.Timeout | null = null;
  private lastDrawMs = 0;

  constructor(
    private readonly source: ProgressSource,
    private readonly stream: NodeJS.WriteStream,
    private readonly everyMs: number,
  ) {}

  get tty(): boolean {
    return this.stream.isTTY === true;
  }

  start(): void {
    this.startedMs = performance.now();
    this.timer = setInterval(() => this.report(), this.tty ? 250 : this.everyMs);
    this.timer.unref();
  }

  /** On a terminal, redraws at most every 100 ms as lines are answered. */
  tick(): void {
    if (!this.tty) return;
    const now = performance.now();
    if (now - this.lastDrawMs >= 100) this.report();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.tty) {
      this.report();
      this.stream.write('\n');
    }
  }

  /** The figures of a progress report. */
  snapshot(): {
    lines: number;
    failed: number;
    skipped: number;
    items: number;
    seconds: number;
    itemsPerSecond: number;
    linesPerSecond: number;
    fraction: number | null;
    etaSeconds: number | null;
  } {
    const { counts, totalBytes } = this.source;
    const seconds = (performance.now() - this.startedMs) / 1000;
    const fraction = totalBytes !== null && totalBytes > 0 ? Math.min(1, this.source.bytesRead() / totalBytes) : null;
    // The ETA reads the input consumed by this run: skipped lines took no time.
    const etaSeconds =
      fraction !== null && fraction > 0 && counts.answered > 0 ? (seconds * (1 - fraction)) / fraction : null;
    return {
      lines: counts.answered,
      failed: counts.failed,
      skipped: counts.skipped,
      items: counts.items,
      seconds,
      itemsPerSecond: seconds > 0 ? counts.items / seconds : 0,
      linesPerSecond: seconds > 0 ? counts.answered / seconds : 0,
      fraction,
      etaSeconds,
    };
  }

  private report(): void {
    this.lastDrawMs = performance.now();
    const s = this.snapshot();
    if (!this.tty) {
      const line = {
        event: 'batch_progress',
        lines: s.lines,
        failed: s.failed,
        skipped: s.skipped,
        items: s.items,
        items_per_s: round(s.itemsPerSecond),
        seconds: round(s.seconds),
        ...(s.fraction !== null ? { done_fraction: round(s.fraction, 4) } : {}),
        ...(s.etaSeconds !== null ? { eta_s: Math.round(s.etaSeconds) } : {}),
      };
      this.stream.write(`${JSON.stringify(line)}\n`);
      return;
    }
    const width = 24;
    const filled = s.fraction === null ? 0 : Math.round(s.fraction * width);
    const bar =
      s.fraction === null
        ? ''
        : `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${(s.fraction * 100).toFixed(1)}% `;
    const eta = s.etaSeconds === null ? '' : ` ETA ${clock(s.etaSeconds)}`;
    const failed = s.failed > 0 ? ` (${s.failed} failed)` : '';
    const skipped = s.skipped > 0 ? `, ${s.skipped} done before` : '';
    this.stream.write(
      `\r${bar}${s.lines} lines${failed}${skipped}, ${s.itemsPerSecond.toFixed(1)} items/s${eta}\x1b[K`,
    );
  }
}

function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

function clock(seconds: number): string {
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const pad = (n: number): string => String(n).padStart(2, '0');
  return h > 0 ? `${h}:${pad(m)}:${pad(s % 60)}` : `${m}:${pad(s % 60)}`;
}
