/**
 * A policy that can be replaced while calls flow: the embedded guardian and the standalone reference
 * guardian both decide with `current()`. A reload (SIGHUP, or a change of the file) validates the
 * new file completely first and swaps the engine in one assignment, so a call sees either the old
 * policy or the new one; an invalid file keeps the old policy and reports one line per problem.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createEngine, type Engine } from './engine';
import { policyFromText, PolicyError, readPolicyFile } from './policy';

export type ReloadResult =
  { readonly ok: true; readonly changed: boolean; readonly sha256: string } | { readonly ok: false; readonly problems: readonly string[] };

export interface ReloadEvents {
  /** After every attempt (for logs and counters). */
  onReload?(result: ReloadResult, reason: string): void;
}

/** Told of every policy swapped in, with the text it was compiled from (the embedded guardian's worker compiles the same). */
export type PolicySwap = (text: string) => void;

/** `tried` of a file that could not be read. */
const MISSING = 'missing';

function fileHash(file: string): string | undefined {
  try {
    return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
  } catch {
    return undefined;
  }
}

export class ReloadablePolicy {
  private engine: Engine;
  private hash: string;
  private source: string;
  private watcher: fs.FSWatcher | undefined;
  private pending: NodeJS.Timeout | undefined;
  /**
   * The bytes last tried (their hash; MISSING when the file could not be read), valid or not: the
   * watcher reloads when the file differs from them, so an invalid file is reported once per change,
   * not again on every event of its directory.
   */
  private tried: string | undefined;

  /** Loads the file at once; throws PolicyError when it is invalid (a start-up error). */
  constructor(
    readonly file: string,
    private readonly events: ReloadEvents = {},
    private readonly onSwap?: PolicySwap,
  ) {
    const { text, sha256 } = readPolicyFile(file);
    this.engine = createEngine(policyFromText(text, file));
    this.hash = sha256;
    this.tried = sha256;
    this.source = text;
  }

  current(): Engine {
    return this.engine;
  }

  get sha256(): string {
    return this.hash;
  }

  /** The text of the policy in force. */
  get text(): string {
    return this.source;
  }

  reload(reason: string): ReloadResult {
    this.tried = fileHash(this.file) ?? MISSING;
    const result = this.tryLoad();
    this.events.onReload?.(result, reason);
    return result;
  }

  private tryLoad(): ReloadResult {
    let loaded: { engine: Engine; text: string; sha256: string };
    try {
      const { text, sha256 } = readPolicyFile(this.file);
      loaded = { engine: createEngine(policyFromText(text, this.file)), text, sha256 };
    } catch (err) {
      return { ok: false, problems: err instanceof PolicyError ? err.problems : [(err as Error).message] };
    }
    const changed = loaded.sha256 !== this.hash;
    this.engine = loaded.engine;
    this.hash = loaded.sha256;
    this.source = loaded.text;
    this.onSwap?.(loaded.text);
    return { ok: true, changed, sha256: this.hash };
  }

  /**
   * Reload when the file changes. The directory is watched, not the file: editors and Kubernetes
   * ConfigMap updates replace the file (a rename or a symlink swap), which a watch on the old inode
   * would miss. Bursts of events are coalesced, and a reload happens only when the bytes differ from
   * the bytes last tried (other files changing in the directory retry nothing).
   */
  watch(debounceMs = 200): void {
    if (this.watcher !== undefined) return;
    const dir = path.dirname(path.resolve(this.file));
    try {
      this.watcher = fs.watch(dir, { persistent: false }, () => {
        if (this.pending !== undefined) clearTimeout(this.pending);
        this.pending = setTimeout(() => {
          this.pending = undefined;
          if ((fileHash(this.file) ?? MISSING) !== this.tried) this.reload('file change');
        }, debounceMs);
        this.pending.unref();
      });
      this.watcher.on('error', () => this.unwatch());
    } catch {
      this.watcher = undefined;
    }
  }

  unwatch(): void {
    this.watcher?.close();
    this.watcher = undefined;
    if (this.pending !== undefined) clearTimeout(this.pending);
    this.pending = undefined;
  }
}
