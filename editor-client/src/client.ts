import * as vscode from 'vscode';
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  State,
  WorkDoneProgress,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { currentSettings } from './config';
import { LINK_COMMANDS, hoverLinks, hoverSymbol } from './editorLinks';
import { ProgressNotification } from './progress';
import { isRecord, type Method, type ParamsByMethod } from './protocol';
import { fixesFor, installServer, openSettings, selectInterpreter, type FixAction } from './interpreter';
import {
  bundledWheel,
  preflight,
  preflightMessage,
  resolveServerCommand,
  spawnFailureMessage,
  type ServerCommand,
} from './serverCommand';

/** Languages whose documents the client syncs to the server (open buffers count as fresh). */
export const DOCUMENT_SELECTOR = [
  'python',
  'javascript',
  'javascriptreact',
  'typescript',
  'typescriptreact',
  'go',
  'rust',
  'java',
  'c',
  'cpp',
].map((language) => ({ scheme: 'file', language }));

export type ConnectionState =
  | { kind: 'stopped' }
  | { kind: 'starting' }
  | { kind: 'running'; command: ServerCommand }
  | { kind: 'failed'; message: string };

export class NotRunningError extends Error {
  constructor(state: ConnectionState) {
    super(
      state.kind === 'failed'
        ? `CodeSynapse server is not running: ${state.message}`
        : state.kind === 'starting'
          ? 'CodeSynapse server is still starting; try again in a moment.'
          : 'CodeSynapse server is not running. Run "CodeSynapse: Restart Server".',
    );
    this.name = 'NotRunningError';
  }
}

/** A CodeSynapse hover with a line of command links (trusted for CodeSynapse's link commands only). */
function withHoverLinks(hover: vscode.Hover, position: { uri: string; line: number; character: number }): vscode.Hover {
  const first: unknown = hover.contents[0];
  const text = typeof first === 'string' ? first : isRecord(first) && typeof first.value === 'string' ? first.value : '';
  const qn = hoverSymbol(text);
  if (!qn) return hover;
  const links = new vscode.MarkdownString(hoverLinks(qn, position));
  links.isTrusted = { enabledCommands: [...LINK_COMMANDS] };
  return new vscode.Hover([...hover.contents, links], hover.range);
}

/** Owns the language client: start, stop, restart and typed custom requests. */
export class ServerConnection implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private _state: ConnectionState = { kind: 'stopped' };
  private readonly stateEmitter = new vscode.EventEmitter<ConnectionState>();
  readonly onDidChangeState = this.stateEmitter.event;
  private starting: Promise<void> | undefined;
  private readonly progressEmitter = new vscode.EventEmitter<string | null>();
  /** The server's indexing progress text ("3/10 files · 30%"); null when it ended. */
  readonly onDidChangeProgress = this.progressEmitter.event;
  private generation = 0;

  constructor(
    private readonly log: vscode.LogOutputChannel,
    /** Where the extension is installed: its dist/server holds the server wheel. */
    private readonly extensionPath = '',
  ) {}

  get state(): ConnectionState {
    return this._state;
  }

  private setState(state: ConnectionState): void {
    this._state = state;
    this.stateEmitter.fire(state);
  }

  start(): Promise<void> {
    if (!this.starting) {
      this.starting = this.doStart().finally(() => {
        this.starting = undefined;
      });
    }
    return this.starting;
  }

  private async doStart(): Promise<void> {
    const generation = ++this.generation;
    this.setState({ kind: 'starting' });
    const { settings, warnings } = currentSettings();
    for (const w of warnings) this.log.warn(`setting ${w.key}: ${w.message}`);

    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    const cmd = resolveServerCommand({
      serverCommand: settings.serverCommand,
      pythonPath: settings.pythonPath,
      workspaceFolders: folders,
    });
    const env = { ...process.env, ...settings.serverEnv };
    const cwd = folders[0];
    this.log.info(`starting server: ${[cmd.command, ...cmd.args].join(' ')} (${cmd.source})`);

    if (cmd.python !== null) {
      const check = await preflight(cmd.python, env, cwd);
      if (generation !== this.generation) return;
      if (!check.ok) {
        const message = preflightMessage(check, cmd);
        this.log.error(`${message} [${check.detail}]`);
        this.setState({ kind: 'failed', message });
        void this.offerFix(message, fixesFor(check.reason, cmd.python, bundledWheel(this.extensionPath) !== null));
        return;
      }
      this.log.info(`codesynapse package found${check.version ? ` (version ${check.version})` : ''}`);
    }

    const serverOptions: ServerOptions = {
      run: { command: cmd.command, args: cmd.args, options: { env, cwd } },
      debug: { command: cmd.command, args: cmd.args, options: { env, cwd } },
    };
    let crashes = 0;
    const clientOptions: LanguageClientOptions = {
      documentSelector: [...DOCUMENT_SELECTOR, { scheme: 'file', pattern: '**/.codesynapse.yaml' }],
      outputChannel: this.log,
      initializationOptions: settings.initializationOptions,
      middleware: {
        // the server's hover is the symbol card; add links to open it, its callers and callees
        provideHover: async (document, position, token, next) => {
          const hover = await next(document, position, token);
          return hover ? withHoverLinks(hover, { uri: document.uri.toString(), line: position.line, character: position.character }) : hover;
        },
      },
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue }),
        closed: () => {
          crashes += 1;
          if (crashes <= 3) {
            this.log.warn(`server exited; restarting (${crashes}/3)`);
            return { action: CloseAction.Restart };
          }
          const message = 'The CodeSynapse server stopped 4 times in a row and is not restarted. The log says why.';
          this.log.error(message);
          this.setState({ kind: 'failed', message });
          void this.offerFix(message, fixesFor('crashed', cmd.python, false));
          // handled: our toast is the only one
          return { action: CloseAction.DoNotRestart, message, handled: true };
        },
      },
    };
    const client = new LanguageClient('codesynapse', 'CodeSynapse', serverOptions, clientOptions);
    this.client = client;
    client.onDidChangeState((e) => {
      if (this.client !== client) return;
      if (e.newState === State.Running) this.setState({ kind: 'running', command: cmd });
      else if (e.newState === State.Starting) this.setState({ kind: 'starting' });
      else if (e.newState === State.Stopped && this._state.kind !== 'failed') this.setState({ kind: 'stopped' });
    });
    try {
      await client.start();
      // the server's progress (the first index) as a notification, not only a status-bar spinner
      client.onRequest('window/workDoneProgress/create', (params: { token: string | number }) => {
        const notification = new ProgressNotification(this.log);
        const forward = notification.onDidChange((text) => this.progressEmitter.fire(text));
        const sub = client.onProgress(WorkDoneProgress.type, params.token, (value) => {
          notification.handle(value);
          if (value.kind === 'end') {
            sub.dispose();
            forward.dispose();
            notification.dispose();
          }
        });
        return null;
      });
      if (this.client === client) this.setState({ kind: 'running', command: cmd });
    } catch (error) {
      if (this.client !== client) return;
      const message = spawnFailureMessage(cmd, error);
      this.log.error(message);
      this.setState({ kind: 'failed', message });
      void this.offerFix(message, fixesFor('spawn', cmd.python, false));
    }
  }

  /** The error toast of a failed start, with buttons that fix it. */
  private async offerFix(message: string, fixes: { actions: FixAction[]; python: string | null }): Promise<void> {
    const choice = await vscode.window.showErrorMessage(message, ...fixes.actions);
    if (choice === 'Install Server' && fixes.python) {
      if (await installServer(fixes.python, this.extensionPath, this.log)) await this.restart();
    } else if (choice === 'Select Interpreter') {
      await selectInterpreter(); // the setting change restarts the server
    } else if (choice === 'Open Settings') {
      await openSettings('codesynapse.serverCommand');
    } else if (choice === 'Show Log') {
      this.log.show();
    } else if (choice === 'Restart Server') {
      await this.restart();
    }
  }

  /** Install the bundled server into the interpreter the server command uses, then restart. */
  async installServer(): Promise<void> {
    const { settings } = currentSettings();
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    const cmd = resolveServerCommand({ serverCommand: settings.serverCommand, pythonPath: settings.pythonPath, workspaceFolders: folders });
    if (cmd.python === null) {
      void vscode.window.showWarningMessage('"codesynapse.serverCommand" is set, so the server is not run by a Python interpreter this extension can install into.');
      return;
    }
    if (await installServer(cmd.python, this.extensionPath, this.log)) await this.restart();
  }

  async stop(): Promise<void> {
    this.generation++;
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(5000);
      } catch (error) {
        this.log.warn(`stopping the server: ${String(error)}`);
      }
    }
    this.setState({ kind: 'stopped' });
  }

  async restart(): Promise<void> {
    this.log.info('restarting server');
    await this.stop();
    await this.start();
  }

  /** Send a custom request; fails with NotRunningError when no server is running. */
  async request<M extends Method>(method: M, params: ParamsByMethod[M], token?: vscode.CancellationToken): Promise<unknown> {
    if (this.starting) await this.starting;
    const client = this.client;
    if (!client || this._state.kind !== 'running') throw new NotRunningError(this._state);
    return token ? client.sendRequest(method, params, token) : client.sendRequest(method, params);
  }

  /** Send a standard LSP request (e.g. textDocument/documentSymbol) to the running server. */
  async lspRequest(method: string, params: unknown, token?: vscode.CancellationToken): Promise<unknown> {
    if (this.starting) await this.starting;
    const client = this.client;
    if (!client || this._state.kind !== 'running') throw new NotRunningError(this._state);
    return token ? client.sendRequest(method, params, token) : client.sendRequest(method, params);
  }

  dispose(): void {
    void this.stop();
    this.stateEmitter.dispose();
  }
}
