import * as vscode from 'vscode';
import { WELCOME_COMMANDS, renderWelcome } from './render';

export const VIEW_ID = 'codesynapse.context';

/** Messages the webview posts back. */
export type PanelMessage =
  | { type: 'ready' }
  | { type: 'card'; selector: string }
  | { type: 'open'; path: string; line: number | null }
  | { type: 'more' }
  | { type: 'refresh' }
  | { type: 'command'; command: string }
  | { type: 'forget'; name: string; id: string | null }
  | { type: 'hierarchy'; selector: string; path: string | null; line: number | null; direction: 'callers' | 'callees' }
  | { type: 'add'; selector: string }
  | { type: 'task'; task: string };

export function parsePanelMessage(value: unknown): PanelMessage | null {
  if (typeof value !== 'object' || value === null) return null;
  const m = value as Record<string, unknown>;
  switch (m.type) {
    case 'ready':
    case 'more':
    case 'refresh':
      return { type: m.type };
    case 'card':
    case 'add':
      return typeof m.selector === 'string' && m.selector ? { type: m.type, selector: m.selector } : null;
    case 'open':
      return typeof m.path === 'string' && m.path
        ? { type: 'open', path: m.path, line: typeof m.line === 'number' && Number.isFinite(m.line) ? m.line : null }
        : null;
    case 'hierarchy':
      return typeof m.selector === 'string' && m.selector && (m.direction === 'callers' || m.direction === 'callees')
        ? {
            type: 'hierarchy',
            selector: m.selector,
            path: typeof m.path === 'string' && m.path ? m.path : null,
            line: typeof m.line === 'number' && Number.isFinite(m.line) ? m.line : null,
            direction: m.direction,
          }
        : null;
    case 'command':
      return typeof m.command === 'string' && WELCOME_COMMANDS.has(m.command) ? { type: 'command', command: m.command } : null;
    case 'forget':
      return typeof m.name === 'string' && m.name
        ? { type: 'forget', name: m.name, id: typeof m.id === 'string' && m.id ? m.id : null }
        : null;
    case 'task':
      return typeof m.task === 'string' && m.task.trim() ? { type: 'task', task: m.task.trim() } : null;
    default:
      return null;
  }
}

export function nonce(): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let out = '';
  for (let i = 0; i < 32; i++) out += chars.charAt(Math.floor(Math.random() * chars.length));
  return out;
}

/** The full HTML document of the webview; `body` is already-escaped HTML from render.ts. */
export function shellHtml(opts: { cspSource: string; styleUri: string; scriptUri: string; nonce: string; body: string; savings?: string }): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${opts.cspSource}; script-src 'nonce-${opts.nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${opts.styleUri}">
<title>CodeSynapse</title>
</head>
<body>
<form id="task-form" aria-label="Context for a task">
<textarea id="task" rows="2" placeholder="Describe a task to get its minimal context…" aria-label="Task"></textarea>
<button type="submit">Get context</button>
</form>
<div id="savings">${opts.savings ?? ''}</div>
<div id="content">${opts.body}</div>
<script nonce="${opts.nonce}" src="${opts.scriptUri}"></script>
</body>
</html>`;
}

/** The "Context" webview view in the CodeSynapse side bar. */
export class ContextPanel implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private body = renderWelcome();
  private savingsHtml = '';
  private readonly disposables: vscode.Disposable[] = [];
  private readonly messageEmitter = new vscode.EventEmitter<PanelMessage>();
  readonly onDidReceiveMessage = this.messageEmitter.event;

  constructor(private readonly extensionUri: vscode.Uri) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    const dist = vscode.Uri.joinPath(this.extensionUri, 'dist');
    view.webview.options = { enableScripts: true, localResourceRoots: [media, dist] };
    view.webview.html = shellHtml({
      cspSource: view.webview.cspSource,
      styleUri: view.webview.asWebviewUri(vscode.Uri.joinPath(media, 'panel.css')).toString(),
      scriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(dist, 'webview.js')).toString(),
      nonce: nonce(),
      body: this.body,
      savings: this.savingsHtml,
    });
    this.disposables.push(
      view.webview.onDidReceiveMessage((raw: unknown) => {
        const msg = parsePanelMessage(raw);
        if (!msg) return;
        if (msg.type === 'ready') {
          void view.webview.postMessage({ type: 'render', html: this.body });
          void view.webview.postMessage({ type: 'savings', html: this.savingsHtml });
        }
        else this.messageEmitter.fire(msg);
      }),
      view.onDidDispose(() => {
        if (this.view === view) this.view = undefined;
      }),
    );
  }

  /** The HTML currently shown (or to be shown when the view opens). */
  get html(): string {
    return this.body;
  }

  /** Show HTML in the panel, opening the panel if needed. */
  async show(html: string, reveal = true): Promise<void> {
    this.body = html;
    if (reveal) await this.reveal();
    if (this.view) await this.view.webview.postMessage({ type: 'render', html });
  }

  /** The session's savings strip above the answers (escaped HTML from savings.ts; '' hides it). */
  async setSavings(html: string): Promise<void> {
    if (html === this.savingsHtml) return;
    this.savingsHtml = html;
    if (this.view) await this.view.webview.postMessage({ type: 'savings', html });
  }

  get savings(): string {
    return this.savingsHtml;
  }

  async reveal(): Promise<void> {
    if (this.view) {
      if (!this.view.visible) this.view.show(true);
      return;
    }
    await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.messageEmitter.dispose();
  }
}
