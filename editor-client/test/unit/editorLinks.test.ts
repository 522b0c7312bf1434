import * as fs from 'node:fs';
import * as path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import * as vscode from './vscode.mock';
import type { ServerConnection } from '../../src/client';
import { SymbolCodeLensProvider } from '../../src/codeLens';
import { LINK_COMMANDS, hoverLinks, hoverSymbol, lensTitle } from '../../src/editorLinks';

const fixture = (name: string): string => fs.readFileSync(path.join(__dirname, 'fixtures', name), 'utf8');

beforeEach(() => vscode.resetMock());

describe('hover links', () => {
  it('reads the symbol of the server\'s hover and links its card, callers, callees and call hierarchy', () => {
    // the hover the server writes for Cart.total (card_markdown, recorded)
    const md = fixture('hover.md');
    expect(hoverSymbol(md)).toBe('shop.cart.Cart.total');
    expect(hoverSymbol('just some text')).toBeNull();
    const pos = { uri: 'file:///ws/shop/cart.py', line: 23, character: 8 };
    const links = hoverLinks('shop.cart.Cart.total', pos);
    const q = encodeURIComponent(JSON.stringify(['shop.cart.Cart.total']));
    expect(links).toBe(
      `[Open card](command:codesynapse.showSymbolCard?${q} "Show the symbol card in the CodeSynapse panel") · ` +
        `[Callers](command:codesynapse.showCallers?${q} "Who calls it") · ` +
        `[Callees](command:codesynapse.showCallees?${q} "What it calls") · ` +
        `[Call Hierarchy](command:codesynapse.showInCallHierarchy?${encodeURIComponent(JSON.stringify([pos]))} "Open VS Code's Call Hierarchy view")`,
    );
    // every linked command is one the hover trusts, and one the extension declares
    const pkg = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../package.json'), 'utf8')) as { contributes: { commands: { command: string }[] } };
    const declared = pkg.contributes.commands.map((c) => c.command);
    for (const c of [...links.matchAll(/command:([\w.]+)\?/g)].map((m) => m[1])) {
      expect(LINK_COMMANDS).toContain(c);
      expect(declared).toContain(c);
    }
  });
});

describe('CodeLens', () => {
  const symbols = [
    // textDocument/documentSymbol (LSP DocumentSymbol[]): class Cart with method total
    {
      name: 'Cart',
      kind: 5,
      range: { start: { line: 20, character: 0 }, end: { line: 32, character: 0 } },
      selectionRange: { start: { line: 20, character: 6 }, end: { line: 20, character: 10 } },
      children: [
        {
          name: 'total',
          kind: 6,
          range: { start: { line: 23, character: 4 }, end: { line: 27, character: 0 } },
          selectionRange: { start: { line: 23, character: 8 }, end: { line: 23, character: 13 } },
        },
        { name: 'TAX', kind: 13, range: { start: { line: 21, character: 4 }, end: { line: 21, character: 9 } }, selectionRange: { start: { line: 21, character: 4 }, end: { line: 21, character: 7 } } },
      ],
    },
  ];
  function connection(sent: { method: string; params: unknown }[]) {
    return {
      state: { kind: 'running' },
      onDidChangeState: () => new vscode.Disposable(),
      lspRequest: (method: string, params: unknown) => {
        sent.push({ method, params });
        return Promise.resolve(symbols);
      },
      request: (method: string, params: unknown) => {
        sent.push({ method, params });
        return Promise.resolve(JSON.parse(fixture('symbolCardTotal.json')) as unknown);
      },
    } as unknown as ServerConnection;
  }
  const doc = { uri: vscode.Uri.file('/ws/shop/cart.py') };

  it('puts "N callers · N tests" over each class, method and function, from the symbol\'s card', async () => {
    const sent: { method: string; params: unknown }[] = [];
    const provider = new SymbolCodeLensProvider(connection(sent));
    const lenses = (await provider.provideCodeLenses(doc as never, {} as never)) as unknown as vscode.CodeLens[];
    expect(lenses.map((l) => [l.range.start.line, l.range.start.character])).toEqual([
      [20, 6],
      [23, 8],
    ]);
    const total = (await provider.resolveCodeLens(lenses[1] as never)) as unknown as vscode.CodeLens;
    // recorded card of Cart.total: counts {callers: 2, callees: 3, tests: 1}
    expect(total.command).toEqual({
      title: '2 callers · 1 test',
      command: 'codesynapse.showSymbolCard',
      arguments: [{ uri: 'file:///ws/shop/cart.py', line: 23, character: 8 }],
      tooltip: 'Show its card (callers and tests) in the CodeSynapse panel',
    });
    expect(sent.at(-1)).toEqual({ method: 'codesynapse/symbolCard', params: { selector: { uri: 'file:///ws/shop/cart.py', line: 23, character: 8 }, maxTokens: 256 } });
    expect(lensTitle({ callers: 1 })).toBe('1 caller · no tests');
    expect(lensTitle({})).toBe('no callers · no tests');
  });

  it('shows none when codesynapse.codeLens.enabled is false', async () => {
    vscode.settingsStore.set('codesynapse.codeLens.enabled', false);
    const sent: { method: string; params: unknown }[] = [];
    const provider = new SymbolCodeLensProvider(connection(sent));
    expect(await provider.provideCodeLenses(doc as never, {} as never)).toEqual([]);
    expect(sent).toEqual([]);
  });
});
