/**
 * The server's work-done progress (the first index: "12/40 files", percentage) as a
 * notification with a progress bar, like rust-analyzer's indexing, instead of only a spinner in
 * the status bar. The language client would show it in the status bar only (ProgressLocation.Window).
 */
import * as vscode from 'vscode';

/** The LSP WorkDoneProgress values ($/progress), as lsprotocol sends them. */
export type ProgressValue =
  | { kind: 'begin'; title: string; message?: string; percentage?: number; cancellable?: boolean }
  | { kind: 'report'; message?: string; percentage?: number }
  | { kind: 'end'; message?: string };

/** "12/40 files · 30%": the server's message with its percentage. */
export function progressText(message: string | undefined, percentage: number | undefined): string {
  const parts = [message?.trim() ?? '', typeof percentage === 'number' ? `${Math.round(percentage)}%` : ''].filter(Boolean);
  return parts.join(' · ');
}

/** Follows one progress token: begin opens the notification, reports move it, end closes it. */
export class ProgressNotification {
  private reporter: vscode.Progress<{ message?: string; increment?: number }> | undefined;
  private done: (() => void) | undefined;
  private shown = 0;
  private pending: { message?: string; increment?: number }[] = [];
  private readonly changed = new vscode.EventEmitter<string | null>();
  /** The current progress text ("3/10 files · 30%"), null when it ended: for the status bar. */
  readonly onDidChange = this.changed.event;

  constructor(private readonly log: vscode.LogOutputChannel) {}

  handle(value: ProgressValue): void {
    if (value.kind === 'begin') {
      const text = progressText(value.message, value.percentage);
      this.log.info(`${value.title}: ${text}`);
      void vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: value.title, cancellable: false },
        (progress) => {
          this.reporter = progress;
          for (const p of this.pending.splice(0)) progress.report(p);
          return new Promise<void>((resolve) => {
            this.done = resolve;
          });
        },
      );
      this.report({ message: text, increment: value.percentage ?? 0 });
      this.shown = value.percentage ?? 0;
      this.changed.fire(text);
    } else if (value.kind === 'report') {
      const text = progressText(value.message, value.percentage);
      const pct = value.percentage;
      const increment = typeof pct === 'number' ? Math.max(0, pct - this.shown) : undefined;
      if (typeof pct === 'number') this.shown = Math.max(this.shown, pct);
      this.report({ message: text, increment });
      this.log.debug(`indexing: ${text}`);
      this.changed.fire(text);
    } else {
      this.log.info(`indexing done: ${value.message ?? ''}`);
      this.done?.();
      this.done = undefined;
      this.reporter = undefined;
      this.changed.fire(null);
    }
  }

  private report(p: { message?: string; increment?: number }): void {
    if (this.reporter) this.reporter.report(p);
    else this.pending.push(p);
  }

  dispose(): void {
    this.done?.();
    this.changed.dispose();
  }
}
