/**
 * A caller that may go away. Lighter than AbortController/AbortSignal on the hot path: no
 * EventTarget and no DOMException per request, and nothing happens for calls that finish normally.
 */
export class Cancellation {
  private listeners: Array<() => void> | undefined;
  private done = false;

  get cancelled(): boolean {
    return this.done;
  }

  cancel(): void {
    if (this.done) return;
    this.done = true;
    const fns = this.listeners;
    this.listeners = undefined;
    if (fns !== undefined) for (const fn of fns) fn();
  }

  /** Run `fn` on cancellation (at once if already cancelled); returns the function that unregisters it. */
  onCancel(fn: () => void): () => void {
    if (this.done) {
      fn();
      return noop;
    }
    (this.listeners ??= []).push(fn);
    return () => {
      const fns = this.listeners;
      if (fns === undefined) return;
      const i = fns.indexOf(fn);
      if (i !== -1) fns.splice(i, 1);
    };
  }
}

const noop = (): void => undefined;
