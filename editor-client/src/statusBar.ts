import * as vscode from 'vscode';
import type { ConnectionState, ServerConnection } from './client';
import { Methods, readIndexStatus, type IndexStatus } from './protocol';
import { readSavings, savingsLines, type Savings } from './savings';

export interface StatusView {
  text: string;
  tooltip: string;
  warning: boolean;
  error: boolean;
}

/** "12 s ago", "3 min ago", "2 h ago", "4 d ago"; null when the time cannot be read. */
export function formatAge(iso: string | null, now: Date): string | null {
  if (!iso) return null;
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return null;
  const s = Math.max(0, Math.round((now.getTime() - t) / 1000));
  if (s < 60) return `${s} s ago`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min ago`;
  const h = Math.floor(min / 60);
  if (h < 48) return `${h} h ago`;
  return `${Math.floor(h / 24)} d ago`;
}

export function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}

/** The index states of docs/PROTOCOL.md, as the tooltip says them. */
const STATE_TEXT: Record<string, string> = {
  ready: 'Index is ready',
  indexing: 'Index is being built',
  idle: 'Index not built by this server yet',
  failed: 'The last index failed; answers come from the index before it',
};

/** An editor document with unsaved changes, by URI and by workspace-relative path. */
export interface UnsavedDocument {
  uri: string;
  relativePath: string;
}

/**
 * The status bar text and tooltip for an index status. `unsavedDocs` are the editor's dirty
 * documents; those the server reports among its open buffers (as URIs or workspace-relative
 * paths) are counted as "unsaved": the index answers from their unsaved text.
 */
export function formatIndexStatus(
  status: IndexStatus,
  unsavedDocs: readonly UnsavedDocument[],
  now: Date,
  progress: string | null = null,
  savings: Savings | null = null,
): StatusView {
  const served = new Set(status.openBuffers);
  const unsaved = unsavedDocs.filter((d) => served.has(d.uri) || served.has(d.relativePath)).length;
  const indexing = status.state === 'indexing';
  const icon = indexing || status.pending > 0 ? '$(sync~spin)' : '$(database)';
  // while indexing, the server's progress ("3/10 files · 30%") says more than the files so far
  const parts = [indexing && progress ? progress : `${formatCount(status.files)} files`];
  if (indexing) parts.unshift('indexing');
  if (status.pending > 0) parts.push(`${formatCount(status.pending)} pending`);
  if (unsaved > 0) parts.push(`${unsaved} unsaved`);
  const text = `${icon} CodeSynapse: ${parts.join(' · ')}`;

  const age = formatAge(status.lastUpdate, now);
  const languages = Object.entries(status.languages)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([lang, n]) => `${lang} ${formatCount(n)}`)
    .join(', ');
  const lines = [
    `${STATE_TEXT[status.state] ?? `Index ${status.state}`}${age ? `, updated ${age}` : ''}`,
    `${formatCount(status.files)} files, ${formatCount(status.symbols)} symbols, ${formatCount(status.edges)} edges`,
  ];
  if (languages) lines.push(`Languages: ${languages}`);
  lines.push(`Pending changes: ${formatCount(status.pending)}`);
  lines.push(`Open buffers served: ${status.openBuffers.length} (${unsaved} unsaved)`);
  if (status.indexedCommit) {
    lines.push(`Commit: ${status.indexedCommit.slice(0, 12)}${status.dirty ? ' + uncommitted changes' : ''}`);
  } else if (status.dirty) {
    lines.push('Working tree has uncommitted changes');
  }
  if (status.policyFingerprint) lines.push(`Policy: ${status.policyFingerprint.slice(0, 16)}`);
  if (savings) lines.push('', ...savingsLines(savings));
  lines.push('', 'Click for details.');
  return { text, tooltip: lines.join('\n'), warning: false, error: false };
}

export function formatConnectionState(state: ConnectionState): StatusView | null {
  switch (state.kind) {
    case 'starting':
      return STARTING;
    case 'stopped':
      return { text: '$(circle-slash) CodeSynapse: stopped', tooltip: 'The server is not running. Click to restart.', warning: true, error: false };
    case 'failed':
      return { text: '$(error) CodeSynapse: not running', tooltip: `${state.message}\n\nClick to show the log.`, warning: false, error: true };
    case 'running':
      return null;
  }
}

const STARTING: StatusView = { text: '$(loading~spin) CodeSynapse: starting', tooltip: 'Starting the CodeSynapse server', warning: false, error: false };

/** The status bar item: index progress and freshness, refreshed by polling and on document events. */
export class IndexStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private inFlight = false;
  private lastStatus: IndexStatus | null = null;
  private progress: string | null = null;
  private lastSavings: Savings | null = null;
  private readonly savingsEmitter = new vscode.EventEmitter<Savings | null>();
  /** The session's savings (codesynapse/ledger), after each refresh; null when a new session starts. */
  readonly onDidChangeSavings = this.savingsEmitter.event;

  constructor(
    private readonly connection: ServerConnection,
    private refreshSeconds: number,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.item = vscode.window.createStatusBarItem('codesynapse.status', vscode.StatusBarAlignment.Left, 10);
    this.item.name = 'CodeSynapse index';
    this.item.command = 'codesynapse.showIndexStatus';
    this.show(formatConnectionState(connection.state) ?? STARTING);
    this.item.show();
    this.disposables.push(
      connection.onDidChangeState((state) => {
        const view = formatConnectionState(state);
        if (view) {
          this.lastStatus = null;
          this.setSavings(null); // the session's savings reset with the session
          this.show(view);
          this.item.command = state.kind === 'failed' ? 'codesynapse.showLog' : state.kind === 'stopped' ? 'codesynapse.restartServer' : 'codesynapse.showIndexStatus';
        } else {
          this.item.command = 'codesynapse.showIndexStatus';
          void this.refresh();
        }
      }),
      connection.onDidChangeProgress((text) => {
        this.progress = text;
        void this.refresh();
      }),
      vscode.workspace.onDidSaveTextDocument(() => this.refreshSoon()),
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.contentChanges.length > 0) this.refreshSoon();
      }),
    );
    this.restartTimer();
  }

  get status(): IndexStatus | null {
    return this.lastStatus;
  }

  setRefreshSeconds(seconds: number): void {
    if (seconds !== this.refreshSeconds) {
      this.refreshSeconds = seconds;
      this.restartTimer();
    }
  }

  private restartTimer(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = setInterval(() => void this.refresh(), this.refreshSeconds * 1000);
  }

  private soon: ReturnType<typeof setTimeout> | undefined;
  private refreshSoon(): void {
    if (this.soon) clearTimeout(this.soon);
    this.soon = setTimeout(() => void this.refresh(), 750);
  }

  private show(view: StatusView): void {
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor = view.error
      ? new vscode.ThemeColor('statusBarItem.errorBackground')
      : view.warning
        ? new vscode.ThemeColor('statusBarItem.warningBackground')
        : undefined;
  }

  async refresh(): Promise<IndexStatus | null> {
    if (this.connection.state.kind !== 'running' || this.inFlight) return this.lastStatus;
    this.inFlight = true;
    try {
      const raw = await this.connection.request(Methods.indexStatus, {});
      const status = readIndexStatus(raw);
      if (!status) {
        this.log.warn(`indexStatus answered an unexpected value: ${JSON.stringify(raw)?.slice(0, 200)}`);
        return this.lastStatus;
      }
      this.lastStatus = status;
      await this.refreshSavings();
      const unsaved = vscode.workspace.textDocuments
        .filter((d) => d.isDirty)
        .map((d) => ({ uri: d.uri.toString(), relativePath: vscode.workspace.asRelativePath(d.uri, false) }));
      if (this.connection.state.kind === 'running') this.show(formatIndexStatus(status, unsaved, new Date(), this.progress, this.lastSavings));
      return status;
    } catch (error) {
      this.log.debug(`indexStatus failed: ${error instanceof Error ? error.message : String(error)}`);
      return this.lastStatus;
    } finally {
      this.inFlight = false;
    }
  }

  get savings(): Savings | null {
    return this.lastSavings;
  }

  private setSavings(savings: Savings | null): void {
    this.lastSavings = savings;
    this.savingsEmitter.fire(savings);
  }

  /** The session's ledger; an older server without it leaves the tooltip without savings. */
  private async refreshSavings(): Promise<void> {
    try {
      const raw = await this.connection.request(Methods.ledger, { last: 0 });
      const savings = readSavings(raw);
      if (savings) this.setSavings(savings);
    } catch (error) {
      this.log.debug(`ledger failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  dispose(): void {
    this.savingsEmitter.dispose();
    if (this.timer) clearInterval(this.timer);
    if (this.soon) clearTimeout(this.soon);
    for (const d of this.disposables) d.dispose();
    this.item.dispose();
  }
}
