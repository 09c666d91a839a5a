/**
 * A one-line progress bar for long startup work (warmup compiles). On a TTY
 * the line is redrawn in place; anywhere else (logs, CI, pipes) each step is
 * one plain line, because carriage returns make log files unreadable.
 */

/** The part of a stream the bar needs; process.stderr fits. */
export interface ProgressStream {
  write(chunk: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
}

const BAR_WIDTH = 24;

export class ProgressBar {
  private readonly total: number;
  private readonly stream: ProgressStream;
  private readonly label: string;
  private drawn = false;

  constructor(total: number, stream: ProgressStream, label: string) {
    this.total = total;
    this.stream = stream;
    this.label = label;
  }

  /** Reports that `done` of `total` steps are finished; `detail` says what the last one was. */
  update(done: number, detail: string): void {
    const count = `${done}/${this.total}`;
    if (!this.stream.isTTY) {
      this.stream.write(`${this.label} ${count} ${detail}\n`);
      return;
    }
    const filled = this.total === 0 ? BAR_WIDTH : Math.round((done / this.total) * BAR_WIDTH);
    const bar = `[${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}]`;
    let line = `${this.label} ${bar} ${count} ${detail}`;
    const columns = this.stream.columns ?? 80;
    if (line.length > columns - 1) line = line.slice(0, Math.max(0, columns - 1));
    // \r + erase-line redraws in place without leaving the end of a longer previous line.
    this.stream.write(`\r\x1b[K${line}`);
    this.drawn = true;
  }

  /** Ends the bar with a summary line. */
  finish(summary: string): void {
    if (this.stream.isTTY && this.drawn) this.stream.write('\n');
    this.stream.write(`${this.label} ${summary}\n`);
  }
}
