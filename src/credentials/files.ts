/**
 * Credential files that change while the proxy runs: Kubernetes swaps Secrets and projected
 * service-account tokens in place (a symlink flip), cert-manager renews certificates. Each file is
 * read once at start (a missing or unreadable file stops the start, naming its variable), then
 * re-read every `intervalMs`; listeners hear about new content only. A later read that fails keeps
 * the last good content and is reported once per distinct problem.
 */
import fs, { readFileSync } from 'node:fs';

/** A start-up problem the operator must fix: printed as a configuration error (exit 2), not a crash. */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}

export interface WatchOptions {
  /** The variable that names the file, for messages. */
  readonly variable: string;
  readonly intervalMs: number;
  /** Told once per distinct read problem after start (the last good content stays in use). */
  readonly onProblem?: (message: string) => void;
}

export class WatchedFile {
  private content: Buffer;
  private readonly listeners = new Set<(content: Buffer) => void>();
  private timer: NodeJS.Timeout | undefined;
  private reading = false;
  private lastProblem: string | undefined;

  private constructor(
    readonly path: string,
    private readonly opts: WatchOptions,
    first: Buffer,
  ) {
    this.content = first;
  }

  /** Read the file now (throws StartupError) and keep watching it. */
  static open(path: string, opts: WatchOptions): WatchedFile {
    let first: Buffer;
    try {
      first = readFileSync(path);
    } catch (err) {
      throw new StartupError(`${opts.variable}=${path}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
    return new WatchedFile(path, opts, first);
  }

  current(): Buffer {
    return this.content;
  }

  text(): string {
    return this.content.toString('utf8');
  }

  /** Call `fn` with every new content; returns the unsubscribe function. Polling starts with the first listener. */
  onChange(fn: (content: Buffer) => void): () => void {
    this.listeners.add(fn);
    if (this.timer === undefined) {
      this.timer = setInterval(() => void this.poll(), this.opts.intervalMs);
      this.timer.unref();
    }
    return () => {
      this.listeners.delete(fn);
      if (this.listeners.size === 0) this.close();
    };
  }

  /** Re-read now (also what the timer does); resolves once listeners were told. */
  async poll(): Promise<void> {
    if (this.reading) return;
    this.reading = true;
    try {
      // fs.promises loads node:fs/promises on first use: a start that never reloads a file skips it (~2 ms).
      const next = await fs.promises.readFile(this.path);
      this.lastProblem = undefined;
      if (next.equals(this.content)) return;
      this.content = next;
      for (const fn of [...this.listeners]) fn(next);
    } catch (err) {
      const problem = `${this.opts.variable}=${this.path}: cannot re-read the file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); the last good content stays in use`;
      if (problem !== this.lastProblem) this.opts.onProblem?.(problem);
      this.lastProblem = problem;
    } finally {
      this.reading = false;
    }
  }

  close(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }
}
