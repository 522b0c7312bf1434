import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ServerConnection } from './client';
import { currentSettings } from './config';
import { currentDiff } from './git';
import { selectInterpreter } from './interpreter';
import { estimateRawCost } from './rawCost';
import {
  MAX_RECALL_QUERY_BYTES,
  Methods,
  asString,
  budgetCanHelp,
  isRecord,
  looksLikeCard,
  readEnvelope,
  readSearchResults,
  type Selector,
} from './protocol';
import {
  checkSelector,
  describeSelector,
  loadMoreQuery,
  nameFromSelection,
  queryBudget,
  taskParams,
  truncateUtf8,
  type Query,
} from './queries';
import type { IndexStatusBar } from './statusBar';
import type { ContextPanel, PanelMessage } from './views/panel';
import { renderBusy, renderError, renderResult, type Candidate, type ResultView } from './views/render';

export const COMMANDS = {
  showSymbolCard: 'codesynapse.showSymbolCard',
  showSymbolContext: 'codesynapse.showSymbolContext',
  showCallers: 'codesynapse.showCallers',
  showCallees: 'codesynapse.showCallees',
  contextForTask: 'codesynapse.contextForTask',
  contextForDiff: 'codesynapse.contextForDiff',
  rememberSelection: 'codesynapse.rememberSelection',
  recall: 'codesynapse.recall',
  showIndexStatus: 'codesynapse.showIndexStatus',
  restartServer: 'codesynapse.restartServer',
  showLog: 'codesynapse.showLog',
  selectInterpreter: 'codesynapse.selectInterpreter',
  showInCallHierarchy: 'codesynapse.showInCallHierarchy',
  openWalkthrough: 'codesynapse.openWalkthrough',
  showMemory: 'codesynapse.showMemory',
  installServer: 'codesynapse.installServer',
} as const;

function workspaceRoot(): string | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}

function relativePath(uri: string): string {
  try {
    return vscode.workspace.asRelativePath(vscode.Uri.parse(uri), false);
  } catch {
    return uri;
  }
}

/** Runs queries and shows their answers in the panel; remembers the last one for "load more". */
export class ContextController implements vscode.Disposable {
  private last: Query | undefined;
  private seq = 0;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly connection: ServerConnection,
    private readonly panel: ContextPanel,
    private readonly statusBar: IndexStatusBar,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.disposables.push(
      panel.onDidReceiveMessage((m) => void this.onMessage(m)),
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.contentChanges.length > 0) void this.markStale(e.document.uri, 'edited');
      }),
      vscode.workspace.onDidSaveTextDocument((d) => void this.markStale(d.uri, 'saved')),
    );
  }

  /**
   * An answer shown before a workspace file changed may no longer hold: say so on it, with a
   * Refresh button, instead of showing it as current.
   */
  private async markStale(uri: vscode.Uri, how: 'edited' | 'saved'): Promise<void> {
    const view = this.view;
    if (!view || view.render.stale || uri.scheme !== 'file') return;
    const root = workspaceRoot();
    if (!root || !uri.fsPath.startsWith(root + path.sep)) return;
    view.render.stale = `${vscode.workspace.asRelativePath(uri, false)} was ${how} after this answer; it may be out of date.`;
    await this.panel.show(renderResult(view.render), false);
  }

  /** What the panel shows now, kept so that it can be redrawn (a candidate added, a result gone stale). */
  private view: { id: number; query: Query; result: unknown; render: ResultView; rerun: () => Promise<unknown> } | undefined;

  /** Run a query and show its answer; `rerun` asks again when the user refreshes a stale answer. */
  async run(query: Query, rerun: () => Promise<unknown> = () => this.run(query)): Promise<unknown> {
    const id = ++this.seq;
    this.last = query;
    this.view = undefined;
    await this.panel.show(renderBusy(query.title));
    try {
      const result = await this.connection.request(query.method, query.params);
      if (id !== this.seq) return result;
      const env = readEnvelope(result);
      const more = loadMoreQuery(query, budgetCanHelp(env));
      let subtitle = query.subtitle;
      if (isRecord(result)) {
        // the symbol's name, not the file:line:col of the cursor that asked for it
        const subject: unknown = looksLikeCard(result) ? result : (result.card ?? result.root);
        const qn = isRecord(subject) ? asString(subject.qualifiedName) : null;
        if (qn) subtitle = qn;
      }
      const root = workspaceRoot();
      const rawEstimate = root ? estimateRawCost(result, root) : null;
      const render: ResultView = {
        title: query.title,
        subtitle,
        result,
        budget: queryBudget(query),
        more: more ? { label: more.label } : null,
        rawEstimate,
      };
      this.view = { id, query, result, render, rerun };
      if (query.method === Methods.minimalContext) render.candidates = await this.taskCandidates(query, result);
      if (id !== this.seq) return result;
      await this.panel.show(renderResult(render));
      return result;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.log.warn(`${query.method} failed: ${message}`);
      if (id === this.seq) await this.panel.show(renderError(query.title, message));
      return undefined;
    }
  }

  /**
   * The symbols a task's answer left out, so that they can be seen and added: those the
   * server names with its omissions (best first, with kind and place), then — when it counted
   * more than it named — the search results for the task's words that are not shown yet, up
   * to the number left out.
   */
  private async taskCandidates(query: Query, result: unknown): Promise<Candidate[]> {
    const env = readEnvelope(result);
    const shown = new Set<string>();
    if (isRecord(result) && Array.isArray(result.cards)) {
      for (const c of result.cards) if (isRecord(c) && typeof c.qualifiedName === 'string') shown.add(c.qualifiedName);
    }
    const out: Candidate[] = [];
    for (const c of env.omitted.flatMap((o) => o.listed)) {
      if (!shown.has(c.selector)) out.push(c);
      shown.add(c.selector);
    }
    const left = env.omitted.filter((o) => /candidate/i.test(o.what)).reduce((n, o) => n + (o.count ?? 0), 0);
    if (out.length >= left) return out;
    try {
      const task = (query.params as { task: string }).task;
      const found = await this.connection.request(Methods.search, { query: task, limit: Math.min(200, shown.size + left + 10) });
      return [...out, ...readSearchResults(found).filter((r) => !shown.has(r.selector))].slice(0, left);
    } catch (error) {
      this.log.debug(`search for the task's candidates failed: ${error instanceof Error ? error.message : String(error)}`);
      return out;
    }
  }

  /** Add a left-out candidate's card to the task answer shown. */
  async addCandidate(selector: string): Promise<void> {
    const view = this.view;
    if (!view) return;
    const { settings } = currentSettings();
    try {
      const answer = await this.connection.request(Methods.symbolCard, { selector, maxTokens: settings.budgets.symbolCard });
      if (this.view !== view) return;
      const card: unknown = isRecord(answer) && isRecord(answer.card) ? answer.card : answer;
      view.render.added = [...(view.render.added ?? []), { card, tokens: readEnvelope(answer).tokens }];
      await this.panel.show(renderResult(view.render));
    } catch (error) {
      void vscode.window.showWarningMessage(`Could not add ${selector}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  async loadMore(): Promise<void> {
    if (!this.last) return;
    const next = loadMoreQuery(this.last, this.view ? budgetCanHelp(readEnvelope(this.view.result)) : true);
    if (next) await this.run(next.query);
  }

  private async onMessage(message: PanelMessage): Promise<void> {
    switch (message.type) {
      case 'card':
        await this.symbolCard(message.selector);
        break;
      case 'more':
        await this.loadMore();
        break;
      case 'add':
        await this.addCandidate(message.selector);
        break;
      case 'hierarchy':
        await this.openCallHierarchy(message.selector, message.path, message.line, message.direction);
        break;
      case 'forget':
        await this.forget(message.name, message.id);
        break;
      case 'command':
        await vscode.commands.executeCommand(message.command);
        break;
      case 'refresh':
        if (this.view) await this.view.rerun();
        break;
      case 'task':
        await this.task(message.task);
        break;
      case 'open':
        await this.open(message.path, message.line);
        break;
      case 'ready':
        break;
    }
  }

  /**
   * Show a symbol in VS Code's Call Hierarchy view (fed by the same server's LSP call
   * hierarchy): open its file with the cursor on its name, then run the view's command.
   */
  async openCallHierarchy(selector: string, file: string | null, line: number | null, direction: 'callers' | 'callees'): Promise<void> {
    if (!file) return;
    const editor = await this.open(file, line);
    if (!editor) return;
    const name = selector.split(/[.#:/]/).pop() ?? selector;
    const first = Math.max(0, (line ?? 1) - 1);
    for (let l = first; l < Math.min(editor.document.lineCount, first + 5); l++) {
      const at = editor.document.lineAt(l).text.search(new RegExp(`\\b${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`));
      if (at >= 0) {
        const pos = new vscode.Position(l, at);
        editor.selection = new vscode.Selection(pos, pos);
        break;
      }
    }
    // the view opens on the symbol at the cursor, then turns to the direction asked for
    await vscode.commands.executeCommand('references-view.showCallHierarchy');
    await vscode.commands.executeCommand(direction === 'callers' ? 'references-view.showIncomingCalls' : 'references-view.showOutgoingCalls');
  }

  async open(file: string, line: number | null): Promise<vscode.TextEditor | undefined> {
    let uri: vscode.Uri;
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(file)) uri = vscode.Uri.parse(file);
    else if (path.isAbsolute(file)) uri = vscode.Uri.file(file);
    else {
      const root = workspaceRoot();
      if (!root) return undefined;
      uri = vscode.Uri.file(path.join(root, file));
    }
    // Card line numbers are 1-based (see protocol.ts); editor positions are 0-based.
    const pos = new vscode.Position(Math.max(0, (line ?? 1) - 1), 0);
    return vscode.window.showTextDocument(uri, { selection: new vscode.Range(pos, pos), preview: true });
  }

  async symbolCard(selector: Selector): Promise<unknown> {
    const { settings } = currentSettings();
    return this.run({
      title: 'Symbol card',
      subtitle: describeSelector(selector, relativePath),
      method: Methods.symbolCard,
      params: { selector, maxTokens: settings.budgets.symbolCard },
    });
  }

  async symbolContext(selector: Selector): Promise<unknown> {
    const { settings } = currentSettings();
    return this.run({
      title: 'Symbol context',
      subtitle: describeSelector(selector, relativePath),
      method: Methods.symbolContext,
      params: { selector, maxTokens: settings.budgets.symbolContext },
    });
  }

  async callGraph(selector: Selector, direction: 'callers' | 'callees'): Promise<unknown> {
    const { settings } = currentSettings();
    return this.run({
      title: direction === 'callers' ? 'Callers' : 'Callees',
      subtitle: describeSelector(selector, relativePath),
      method: Methods.callGraph,
      params: {
        selector,
        direction,
        depth: settings.callGraphDepth,
        limit: settings.callGraphLimit,
        maxTokens: settings.budgets.callGraph,
      },
    });
  }

  async task(task: string): Promise<unknown> {
    const { settings } = currentSettings();
    const { params, truncated } = taskParams(task, settings.budgets.minimalContext);
    if (truncated) void vscode.window.showWarningMessage('The task text was cut to 8 KiB.');
    return this.run({ title: 'Context for a task', subtitle: params.task, method: Methods.minimalContext, params });
  }

  async diff(): Promise<unknown> {
    const root = workspaceRoot();
    if (!root) {
      void vscode.window.showWarningMessage('Open a folder to get the context of its git diff.');
      return undefined;
    }
    // unsaved editor buffers count as they are shown, not as they are on disk
    const overlays = vscode.workspace.textDocuments
      .filter((doc) => doc.isDirty && doc.uri.scheme === 'file' && doc.uri.fsPath.startsWith(root + path.sep))
      .map((doc) => ({ path: path.relative(root, doc.uri.fsPath), text: doc.getText() }));
    const d = await currentDiff(root, undefined, overlays);
    if (!d.ok) {
      if (d.reason === 'empty') void vscode.window.showInformationMessage(d.message);
      else await this.panel.show(renderError('Context for the current git diff', d.message));
      return undefined;
    }
    const { settings } = currentSettings();
    const files = (d.diff.match(/^diff --git /gm) ?? []).length;
    const unsaved = d.unsaved > 0 ? ` (${d.unsaved} unsaved)` : '';
    return this.run(
      {
        title: 'Context for the current git diff',
        subtitle: `${files} changed file${files === 1 ? '' : 's'}${unsaved}, ${d.bytes.toLocaleString('en-US')} bytes of diff`,
        method: Methods.prContext,
        params: { diff: d.diff, maxTokens: settings.budgets.prContext },
      },
      () => this.diff(),
    );
  }

  async recall(query: string): Promise<unknown> {
    const q = truncateUtf8(query.trim(), MAX_RECALL_QUERY_BYTES).text;
    return this.run({ title: 'Recall', subtitle: q, method: Methods.recall, params: { query: q, includeIds: true } });
  }

  /** The remembered entities (this session's and durable), each with a Delete button. */
  async showMemory(): Promise<unknown> {
    return this.run({ title: 'Memory', subtitle: 'what agents and you remembered in this workspace', method: Methods.listMemory, params: { includeIds: true } });
  }

  /** Forget one entity (by id when the answer gave it, else by name) after the user confirms, then redraw. */
  async forget(name: string, id: string | null): Promise<void> {
    const choice = await vscode.window.showWarningMessage(`Forget "${name}" and all its facts?`, { modal: true }, 'Forget');
    if (choice !== 'Forget') return;
    try {
      await this.connection.request(Methods.forget, id ? { ids: [id] } : { names: [name] });
      if (this.view) await this.view.rerun();
    } catch (error) {
      void vscode.window.showErrorMessage(`Could not forget "${name}": ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  async remember(subject: string, text: string, type: string): Promise<unknown> {
    const object = truncateUtf8(text.trim(), 2048).text;
    return this.run({
      title: 'Remembered',
      subtitle: `${subject}: ${object.length > 80 ? `${object.slice(0, 80)}…` : object}`,
      method: Methods.remember,
      params: {
        entities: [{ name: subject, type }],
        facts: [{ subject, predicate: 'note', object, sourceClient: 'vscode' }],
      },
    });
  }

  async indexStatus(): Promise<void> {
    await this.panel.show(renderBusy('Index status'));
    try {
      const raw = await this.connection.request(Methods.indexStatus, {});
      void this.statusBar.refresh();
      await this.panel.show(renderResult({ title: 'Index status', result: raw, budget: null, more: null }));
    } catch (error) {
      await this.panel.show(renderError('Index status', error instanceof Error ? error.message : String(error)));
    }
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}

/** The symbol the user means: a command argument, the selected name, the cursor, or a typed name. */
async function pickSelector(arg: unknown, prompt: string): Promise<Selector | undefined> {
  if (typeof arg === 'string' && arg.trim()) return arg.trim();
  // a position, from a CodeLens or a hover link
  if (isRecord(arg) && typeof arg.uri === 'string' && typeof arg.line === 'number' && typeof arg.character === 'number') {
    return { uri: arg.uri, line: arg.line, character: arg.character };
  }
  const editor = vscode.window.activeTextEditor;
  if (editor) {
    const selected = nameFromSelection(editor.document.getText(editor.selection));
    if (selected) return selected;
    const pos = editor.selection.active;
    return { uri: editor.document.uri.toString(), line: pos.line, character: pos.character };
  }
  const typed = await vscode.window.showInputBox({
    title: prompt,
    prompt: 'Qualified name (package.module.Class.method) or bare name',
    placeHolder: 'package.module.function',
    ignoreFocusOut: true,
  });
  return typed?.trim() ? typed.trim() : undefined;
}

async function enclosingSymbolName(editor: vscode.TextEditor): Promise<string | null> {
  try {
    const symbols = await vscode.commands.executeCommand<(vscode.DocumentSymbol | vscode.SymbolInformation)[] | undefined>(
      'vscode.executeDocumentSymbolProvider',
      editor.document.uri,
    );
    const pos = editor.selection.start;
    let best: string | null = null;
    const walk = (list: vscode.DocumentSymbol[], prefix: string): void => {
      for (const s of list) {
        if (s.range.contains(pos)) {
          best = prefix + s.name;
          walk(s.children ?? [], `${prefix}${s.name}.`);
        }
      }
    };
    if (symbols && symbols.length > 0 && 'children' in (symbols[0] as object)) walk(symbols as vscode.DocumentSymbol[], '');
    return best;
  } catch {
    return null;
  }
}

export function registerCommands(
  controller: ContextController,
  connection: ServerConnection,
  log: vscode.LogOutputChannel,
): vscode.Disposable[] {
  const check = (selector: Selector): boolean => {
    const problem = checkSelector(selector);
    if (problem) void vscode.window.showWarningMessage(problem);
    return problem === null;
  };
  return [
    vscode.commands.registerCommand(COMMANDS.showSymbolCard, async (arg?: unknown) => {
      const s = await pickSelector(arg, 'CodeSynapse: symbol card');
      if (s !== undefined && check(s)) return controller.symbolCard(s);
      return undefined;
    }),
    vscode.commands.registerCommand(COMMANDS.showSymbolContext, async (arg?: unknown) => {
      const s = await pickSelector(arg, 'CodeSynapse: symbol context');
      if (s !== undefined && check(s)) return controller.symbolContext(s);
      return undefined;
    }),
    vscode.commands.registerCommand(COMMANDS.showCallers, async (arg?: unknown) => {
      const s = await pickSelector(arg, 'CodeSynapse: callers of');
      if (s !== undefined && check(s)) return controller.callGraph(s, 'callers');
      return undefined;
    }),
    vscode.commands.registerCommand(COMMANDS.showCallees, async (arg?: unknown) => {
      const s = await pickSelector(arg, 'CodeSynapse: callees of');
      if (s !== undefined && check(s)) return controller.callGraph(s, 'callees');
      return undefined;
    }),
    vscode.commands.registerCommand(COMMANDS.contextForTask, async (arg?: unknown) => {
      const task =
        typeof arg === 'string' && arg.trim()
          ? arg
          : await vscode.window.showInputBox({
              title: 'CodeSynapse: context for a task',
              prompt: 'Describe the task in plain words',
              placeHolder: 'e.g. add retry with backoff to the HTTP client',
              ignoreFocusOut: true,
            });
      if (task?.trim()) return controller.task(task);
      return undefined;
    }),
    vscode.commands.registerCommand(COMMANDS.contextForDiff, () => controller.diff()),
    vscode.commands.registerCommand(COMMANDS.rememberSelection, async () => {
      const editor = vscode.window.activeTextEditor;
      const text = editor ? editor.document.getText(editor.selection) : '';
      if (!editor || !text.trim()) {
        void vscode.window.showInformationMessage('Select the text to remember first.');
        return undefined;
      }
      const symbol = await enclosingSymbolName(editor);
      const subject = await vscode.window.showInputBox({
        title: 'CodeSynapse: remember selection',
        prompt: 'What is this a fact about? (symbol, file or topic)',
        value: symbol ?? vscode.workspace.asRelativePath(editor.document.uri, false),
        ignoreFocusOut: true,
      });
      if (!subject?.trim()) return undefined;
      return controller.remember(subject.trim(), text, symbol && subject.trim() === symbol ? 'symbol' : 'topic');
    }),
    vscode.commands.registerCommand(COMMANDS.recall, async (arg?: unknown) => {
      const query =
        typeof arg === 'string' && arg.trim()
          ? arg
          : await vscode.window.showInputBox({
              title: 'CodeSynapse: recall',
              prompt: 'What should be recalled from this session’s memory?',
              ignoreFocusOut: true,
            });
      if (query?.trim()) return controller.recall(query);
      return undefined;
    }),
    vscode.commands.registerCommand(COMMANDS.showIndexStatus, () => controller.indexStatus()),
    vscode.commands.registerCommand(COMMANDS.showMemory, () => controller.showMemory()),
    vscode.commands.registerCommand(COMMANDS.restartServer, () => connection.restart()),
    vscode.commands.registerCommand(COMMANDS.showLog, () => log.show()),
    vscode.commands.registerCommand(COMMANDS.selectInterpreter, () => selectInterpreter()),
    vscode.commands.registerCommand(COMMANDS.openWalkthrough, () =>
      vscode.commands.executeCommand('workbench.action.openWalkthrough', 'codesynapse.codesynapse#codesynapse.gettingStarted', false),
    ),
    vscode.commands.registerCommand(COMMANDS.showInCallHierarchy, async (arg?: unknown) => {
      // the built-in Call Hierarchy view at a position (a hover link), or at the cursor
      if (isRecord(arg) && typeof arg.uri === 'string' && typeof arg.line === 'number' && typeof arg.character === 'number') {
        const editor = await vscode.window.showTextDocument(vscode.Uri.parse(arg.uri), { preview: true });
        const pos = new vscode.Position(arg.line, arg.character);
        editor.selection = new vscode.Selection(pos, pos);
      }
      await vscode.commands.executeCommand('references-view.showCallHierarchy');
    }),
    vscode.commands.registerCommand(COMMANDS.installServer, () => connection.installServer()),
  ];
}
