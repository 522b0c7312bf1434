/**
 * A small stand-in for the `vscode` module, for unit tests only (the module exists only inside
 * the editor). It implements just what the extension's modules touch, with real behaviour
 * where that is cheap (events, URIs, configuration lookups), and records registrations so
 * tests can inspect them. The end-to-end test runs the extension in a real VS Code.
 */
import * as path from 'node:path';

type Listener<T> = (e: T) => unknown;

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  readonly event = (listener: Listener<T>): Disposable => {
    this.listeners.push(listener);
    return new Disposable(() => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    });
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) l(e);
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class Disposable {
  constructor(private readonly fn: () => void = () => undefined) {}
  dispose(): void {
    this.fn();
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly path: string,
  ) {}
  static file(p: string): Uri {
    return new Uri('file', p);
  }
  static parse(value: string): Uri {
    const m = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/i.exec(value);
    if (!m) return new Uri('file', value);
    return new Uri(m[1] as string, decodeURIComponent(m[2] as string));
  }
  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri(base.scheme, path.posix.join(base.path, ...parts));
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return `${this.scheme}://${this.path}`;
  }
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(start: Position | number, end: Position | number, endLine?: number, endCharacter?: number) {
    if (typeof start === 'number') {
      this.start = new Position(start, end as number);
      this.end = new Position(endLine ?? start, endCharacter ?? (end as number));
    } else {
      this.start = start;
      this.end = end as Position;
    }
  }
  contains(p: Position): boolean {
    const after = p.line > this.start.line || (p.line === this.start.line && p.character >= this.start.character);
    const before = p.line < this.end.line || (p.line === this.end.line && p.character <= this.end.character);
    return after && before;
  }
}

export class Selection extends Range {}

export class CodeLens {
  command: { title: string; command: string; arguments?: unknown[]; tooltip?: string } | undefined;
  constructor(readonly range: Range) {}
}

export class MarkdownString {
  isTrusted: boolean | { enabledCommands: string[] } | undefined;
  constructor(public value = '') {}
}

export class Hover {
  constructor(
    readonly contents: unknown[],
    readonly range?: Range,
  ) {}
}

export const languages = {
  registerCodeLensProvider: () => new Disposable(),
};

export class ThemeColor {
  constructor(readonly id: string) {}
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export class LanguageModelTextPart {
  constructor(readonly value: string) {}
}

export class LanguageModelToolResult {
  constructor(readonly content: unknown[]) {}
}

// ---- configuration ---------------------------------------------------------------------------

/** Values keyed by full setting id, e.g. "codesynapse.budget.symbolCard". Tests set them. */
export const settingsStore = new Map<string, unknown>();

/** Fire these to simulate editing / saving a document. */
export const documentChanged = new EventEmitter<unknown>();
export const documentSaved = new EventEmitter<unknown>();

/** Configuration updates the extension made: [full id, value, target]. */
export const configUpdates: [string, unknown, unknown][] = [];

export const workspace = {
  workspaceFolders: undefined as { uri: Uri; name: string; index: number }[] | undefined,
  textDocuments: [] as { isDirty: boolean; uri: Uri; getText?: () => string }[],
  getConfiguration(section: string) {
    return {
      get<T>(key: string, fallback?: T): T | undefined {
        const id = `${section}.${key}`;
        return settingsStore.has(id) ? (settingsStore.get(id) as T) : fallback;
      },
      update(key: string, value: unknown, target?: unknown): Promise<void> {
        const id = `${section}.${key}`;
        configUpdates.push([id, value, target]);
        settingsStore.set(id, value);
        return Promise.resolve();
      },
    };
  },
  asRelativePath(uri: Uri | string): string {
    const p = typeof uri === 'string' ? uri : uri.fsPath;
    const root = workspace.workspaceFolders?.[0]?.uri.fsPath;
    return root && p.startsWith(`${root}/`) ? p.slice(root.length + 1) : p;
  },
  onDidChangeConfiguration: () => new Disposable(),
  onDidSaveTextDocument: (l: Listener<unknown>) => documentSaved.event(l),
  onDidChangeTextDocument: (l: Listener<unknown>) => documentChanged.event(l),
};

// ---- window, commands, lm ----------------------------------------------------------------------

export interface RecordedStatusItem {
  id: string;
  text: string;
  tooltip: string | undefined;
  name: string | undefined;
  command: string | undefined;
  backgroundColor: ThemeColor | undefined;
  visible: boolean;
  show(): void;
  hide(): void;
  dispose(): void;
}

export const statusItems: RecordedStatusItem[] = [];
export const messages: { level: 'info' | 'warning' | 'error'; text: string; actions?: string[] }[] = [];

export const window = {
  activeTextEditor: undefined as unknown,
  createStatusBarItem(id: string): RecordedStatusItem {
    const item: RecordedStatusItem = {
      id,
      text: '',
      tooltip: undefined,
      name: undefined,
      command: undefined,
      backgroundColor: undefined,
      visible: false,
      show() {
        item.visible = true;
      },
      hide() {
        item.visible = false;
      },
      dispose() {
        item.visible = false;
      },
    };
    statusItems.push(item);
    return item;
  },
  showInformationMessage(text: string, ...actions: unknown[]) {
    messages.push({ level: 'info', text, actions: actions.filter((a) => typeof a === 'string') });
    return Promise.resolve(answers.message.shift());
  },
  showWarningMessage(text: string, ...actions: unknown[]) {
    messages.push({ level: 'warning', text, actions: actions.filter((a) => typeof a === 'string') });
    return Promise.resolve(answers.message.shift());
  },
  showErrorMessage(text: string, ...actions: unknown[]) {
    messages.push({ level: 'error', text, actions: actions.filter((a) => typeof a === 'string') });
    return Promise.resolve(answers.message.shift());
  },
  showInputBox: () => Promise.resolve(answers.inputBox.shift()),
  showQuickPick(items: unknown[], options?: unknown) {
    shownQuickPicks.push({ items, options });
    const answer = answers.quickPick.shift();
    return Promise.resolve(answer ? answer(items) : undefined);
  },
  withProgress<R>(options: { title?: string }, task: (progress: { report(v: { message?: string; increment?: number }): void }, token: unknown) => Promise<R>): Promise<R> {
    progressReports.push({ title: options.title });
    return task({ report: (v) => progressReports.push(v) }, { isCancellationRequested: false, onCancellationRequested: () => new Disposable() });
  },
  showTextDocument: () => Promise.resolve(undefined),
};

export const executedCommands: { command: string; args: unknown[] }[] = [];
export const registeredCommands = new Map<string, (...args: unknown[]) => unknown>();

export const commands = {
  registerCommand(id: string, fn: (...args: unknown[]) => unknown): Disposable {
    registeredCommands.set(id, fn);
    return new Disposable(() => registeredCommands.delete(id));
  },
  executeCommand(command: string, ...args: unknown[]): Promise<unknown> {
    executedCommands.push({ command, args });
    return Promise.resolve(undefined);
  },
};

export const registeredTools = new Map<string, { invoke: (...a: unknown[]) => unknown; prepareInvocation?: (...a: unknown[]) => unknown }>();

export const lm = {
  registerTool(name: string, tool: { invoke: (...a: unknown[]) => unknown }): Disposable {
    registeredTools.set(name, tool);
    return new Disposable(() => registeredTools.delete(name));
  },
};

export const env = {
  clipboard: { writeText: () => Promise.resolve() },
  remoteName: undefined as string | undefined,
};

export enum ConfigurationTarget {
  Global = 1,
  Workspace = 2,
  WorkspaceFolder = 3,
}

export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

/** Installed extensions by id; tests add fakes of other extensions' APIs. */
export const installedExtensions = new Map<string, { isActive: boolean; exports: unknown; activate(): Promise<unknown> }>();

export const extensions = {
  getExtension(id: string) {
    return installedExtensions.get(id);
  },
};

/** Answers queued for showQuickPick / showInputBox / message buttons, consumed in order. */
export const answers = { quickPick: [] as ((items: unknown[]) => unknown)[], inputBox: [] as (string | undefined)[], message: [] as (string | undefined)[] };
export const shownQuickPicks: { items: unknown[]; options: unknown }[] = [];
export const progressReports: { title?: string; message?: string; increment?: number }[] = [];

/** Reset every recorded thing between tests. */
export function resetMock(): void {
  settingsStore.clear();
  statusItems.length = 0;
  messages.length = 0;
  executedCommands.length = 0;
  registeredCommands.clear();
  registeredTools.clear();
  workspace.workspaceFolders = undefined;
  workspace.textDocuments = [];
  window.activeTextEditor = undefined;
  env.remoteName = undefined;
  documentChanged.dispose();
  documentSaved.dispose();
  installedExtensions.clear();
  answers.quickPick.length = 0;
  answers.inputBox.length = 0;
  answers.message.length = 0;
  shownQuickPicks.length = 0;
  progressReports.length = 0;
  configUpdates.length = 0;
}
