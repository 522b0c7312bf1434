/**
 * CodeLens over definitions: how many call sites call it and how many tests cover it, from the
 * symbol's card (like GitLens' and rust-analyzer's reference lenses). Resolved lazily: VS Code
 * asks only for the lenses on screen. Turned off with `codesynapse.codeLens.enabled`.
 */
import * as vscode from 'vscode';
import type { ServerConnection } from './client';
import { LENS_SYMBOL_KINDS, lensTitle } from './editorLinks';
import { Methods, isRecord, readCard } from './protocol';

interface LspRange {
  start: { line: number; character: number };
  end: { line: number; character: number };
}
interface LspDocumentSymbol {
  name: string;
  kind: number;
  range: LspRange;
  selectionRange: LspRange;
  children?: LspDocumentSymbol[];
}

class SymbolLens extends vscode.CodeLens {
  constructor(
    range: vscode.Range,
    readonly uri: string,
    readonly position: { line: number; character: number },
  ) {
    super(range);
  }
}

export function codeLensEnabled(): boolean {
  return vscode.workspace.getConfiguration('codesynapse').get<boolean>('codeLens.enabled') !== false;
}

export class SymbolCodeLensProvider implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly connection: ServerConnection) {
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('codesynapse.codeLens')) this.refresh();
      }),
      vscode.workspace.onDidSaveTextDocument(() => this.refresh()),
      connection.onDidChangeState((s) => {
        if (s.kind === 'running') this.refresh();
      }),
    );
  }

  refresh(): void {
    this.changed.fire();
  }

  async provideCodeLenses(document: vscode.TextDocument, token: vscode.CancellationToken): Promise<vscode.CodeLens[]> {
    if (!codeLensEnabled() || this.connection.state.kind !== 'running') return [];
    let symbols: unknown;
    try {
      symbols = await this.connection.lspRequest('textDocument/documentSymbol', { textDocument: { uri: document.uri.toString() } }, token);
    } catch {
      return [];
    }
    const lenses: vscode.CodeLens[] = [];
    const walk = (list: LspDocumentSymbol[]): void => {
      for (const s of list) {
        if (LENS_SYMBOL_KINDS.has(s.kind) && s.selectionRange) {
          const { line, character } = s.selectionRange.start;
          const range = new vscode.Range(line, character, line, character);
          lenses.push(new SymbolLens(range, document.uri.toString(), { line, character }));
        }
        if (Array.isArray(s.children)) walk(s.children);
      }
    };
    // DocumentSymbol[] (hierarchical) only; a flat SymbolInformation[] has no selection ranges
    if (Array.isArray(symbols) && symbols.every((s) => isRecord(s) && 'selectionRange' in s)) walk(symbols as LspDocumentSymbol[]);
    return lenses;
  }

  async resolveCodeLens(lens: vscode.CodeLens): Promise<vscode.CodeLens> {
    if (!(lens instanceof SymbolLens)) return lens;
    const got = await this.countsAt(lens.uri, lens.position);
    const selector = { uri: lens.uri, line: lens.position.line, character: lens.position.character };
    lens.command = got
      ? { title: lensTitle(got), command: 'codesynapse.showSymbolCard', arguments: [selector], tooltip: 'Show its card (callers and tests) in the CodeSynapse panel' }
      : { title: 'CodeSynapse: not indexed yet', command: '' };
    return lens;
  }

  private async countsAt(uri: string, position: { line: number; character: number }): Promise<Record<string, number> | null> {
    try {
      const answer = await this.connection.request(Methods.symbolCard, { selector: { uri, ...position }, maxTokens: 256 });
      const card = readCard(isRecord(answer) && isRecord(answer.card) ? answer.card : answer);
      return card ? card.counts : null;
    } catch {
      return null;
    }
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.changed.dispose();
  }
}
