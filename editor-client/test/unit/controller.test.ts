import * as fs from 'node:fs';
import * as path from 'node:path';
import * as os from 'node:os';
import { execFileSync } from 'node:child_process';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import * as vscode from './vscode.mock';
import type { ServerConnection } from '../../src/client';
import { ContextController } from '../../src/commands';
import type { IndexStatusBar } from '../../src/statusBar';
import { ContextPanel } from '../../src/views/panel';

const log = { info: () => undefined, warn: () => undefined, debug: () => undefined, error: () => undefined } as never;

/** A stand-in connection that records requests and answers with an envelope sized by the budget. */
function recordingConnection(answer: (method: string, params: Record<string, unknown>) => unknown) {
  const sent: { method: string; params: Record<string, unknown> }[] = [];
  const connection = {
    request: (method: string, params: Record<string, unknown>) => {
      sent.push({ method, params });
      return Promise.resolve(answer(method, params));
    },
  } as unknown as ServerConnection;
  return { sent, connection };
}

beforeEach(() => vscode.resetMock());

/** Answers the real server gave on fixtures/python_repo (scripts/record_answers.py, over LSP). */
function recorded(name: string): Record<string, unknown> {
  return JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', `${name}.json`), 'utf8')) as Record<string, unknown>;
}

describe('ContextController', () => {
  it('shows a card with its meter, then asks again with double the budget on "load more"', async () => {
    vscode.settingsStore.set('codesynapse.budget.symbolCard', 1000);
    // the recorded card of Cart.total, its budget figures set for the case: 3 callers left out at 1,000
    const { sent, connection } = recordingConnection((_m, p) => ({
      ...recorded('symbolCardTotal'),
      tokens: 700,
      maxTokens: p.maxTokens,
      rawTokens: 3000,
      ...(p.maxTokens === 1000 ? { truncated: true, omitted: [{ what: 'callers', count: 3, hint: 'raise maxTokens' }] } : {}),
    }));
    const panel = new ContextPanel(vscode.Uri.file('/ext') as never);
    const controller = new ContextController(connection, panel, {} as IndexStatusBar, log);

    await controller.symbolCard('shop.cart.Cart.total');
    expect(sent).toEqual([{ method: 'codesynapse/symbolCard', params: { selector: 'shop.cart.Cart.total', maxTokens: 1000 } }]);
    expect(panel.html).toContain('<article class="card" data-qualified-name="shop.cart.Cart.total">');
    expect(panel.html).toContain('data-tokens="700" data-budget="1000" data-raw="3000"');
    expect(panel.html).toContain('700 of 1,000 tokens (70% of budget) · raw files 3,000 tokens · 76.7% saved');
    expect(panel.html).toContain('<button class="more" data-action="more">Load more (budget 2,000 tokens)</button>');
    expect(vscode.executedCommands.map((c) => c.command)).toContain('codesynapse.context.focus');

    await controller.loadMore();
    expect(sent[1]).toEqual({ method: 'codesynapse/symbolCard', params: { selector: 'shop.cart.Cart.total', maxTokens: 2000 } });
    expect(panel.html).toContain('data-tokens="700" data-budget="2000" data-raw="3000"');
    expect(panel.html).not.toContain('class="omitted"');
  });

  it('shows the server error in the panel', async () => {
    const connection = { request: () => Promise.reject(new Error('Unknown symbol: nope')) } as unknown as ServerConnection;
    const panel = new ContextPanel(vscode.Uri.file('/ext') as never);
    const controller = new ContextController(connection, panel, {} as IndexStatusBar, log);
    await controller.callGraph('nope', 'callers');
    expect(panel.html).toBe(
      '<div class="result error-result"><header class="result-head"><h2>Callers</h2></header><p class="error" role="alert">Unknown symbol: nope</p></div>',
    );
  });

  it('lists a task\'s omitted candidates, adds a picked one, and offers no useless "load more"', async () => {
    const byMethod: Record<string, string> = {
      'codesynapse/minimalContext': 'minimalContext',
      'codesynapse/search': 'search',
      'codesynapse/symbolCard': 'symbolCardTestTotal',
    };
    const { sent, connection } = recordingConnection((m) => recorded(byMethod[m] as string));
    const panel = new ContextPanel(vscode.Uri.file('/ext') as never);
    const controller = new ContextController(connection, panel, {} as IndexStatusBar, log);

    await controller.task('apply a discount to the cart total');
    // the server names the 8 weaker candidates it left out: no search is needed
    expect(sent.map((r) => r.method)).toEqual(['codesynapse/minimalContext']);
    // "8 weaker candidates ... name an identifier, or search the words": twice the budget would
    // answer the same 6 cards, so there is no Load more button; the 8 candidates are listed instead.
    expect(panel.html).not.toContain('data-action="more"');
    expect(panel.html).toContain('Omitted candidates (8)');
    const listed = [...panel.html.matchAll(/data-action="add" data-selector="([^"]+)"/g)].map((m) => m[1]);
    expect(listed).toEqual([
      'shop.pricing',
      'shop.cart',
      'test_cart.test_total',
      'shop.cart.BaseCart.count',
      'shop.cart.BaseCart',
      'shop.cart.BaseCart.add',
      'test_cart.test_discount',
      'README.md#Shop &gt; Pricing',
    ]);
    expect(panel.html).toContain('data-tokens="708" data-budget="1500"');

    await controller.addCandidate('test_cart.test_total');
    expect(sent[1]).toEqual({ method: 'codesynapse/symbolCard', params: { selector: 'test_cart.test_total', maxTokens: 2000 } });
    expect(panel.html).toContain('Added by you (1) <span class="muted">+148 tokens</span>');
    expect(panel.html).toContain('<article class="card" data-qualified-name="test_cart.test_total">');
    expect(panel.html).toContain('Omitted candidates (7)');
    expect(panel.html).not.toContain('data-action="add" data-selector="test_cart.test_total"');
    // the meter counts the added card: 708 + 148
    expect(panel.html).toContain('data-tokens="856" data-budget="1500"');
  });

  it('lists the candidates the server names with its omissions, with kind and place, and adds one', async () => {
    const answer = { ...recorded('minimalContext') };
    answer.omitted = [
      { what: 'candidate symbols', count: 1, hint: 'narrow the task or pass paths', candidates: [{ qualifiedName: 'shop.cart.BaseCart.count', kind: 'method', path: 'shop/cart.py', line: 17, legs: ['graph'] }] },
      { what: 'weaker candidates', count: 1, hint: 'name an identifier, or search the words', candidates: [{ qualifiedName: 'test_cart.test_total', kind: 'test', path: 'tests/test_cart.py', line: 5, legs: ['graph'] }] },
    ];
    const { sent, connection } = recordingConnection((m) => (m === 'codesynapse/symbolCard' ? recorded('symbolCardTestTotal') : answer));
    const panel = new ContextPanel(vscode.Uri.file('/ext') as never);
    const controller = new ContextController(connection, panel, {} as IndexStatusBar, log);
    await controller.task('apply a discount');
    // all that was left out is named: no search
    expect(sent.map((r) => r.method)).toEqual(['codesynapse/minimalContext']);
    expect(panel.html).toContain('Omitted candidates (2)');
    expect([...panel.html.matchAll(/data-action="add" data-selector="([^"]+)"/g)].map((m) => m[1])).toEqual(['shop.cart.BaseCart.count', 'test_cart.test_total']);
    expect(panel.html).toContain('<span class="kind">test</span>');
    expect(panel.html).toContain('data-action="open" data-path="tests/test_cart.py" data-line="5"');
    // adding one changes what is visible: its card is shown, it leaves the list
    await controller.addCandidate('test_cart.test_total');
    expect(panel.html).toContain('<article class="card" data-qualified-name="test_cart.test_total">');
    expect(panel.html).toContain('Omitted candidates (1)');
  });

  it('searches for the rest when the server named fewer candidates than it left out', async () => {
    const answer = { ...recorded('minimalContext') };
    answer.omitted = [{ what: 'weaker candidates', count: 3, hint: 'name an identifier', candidates: [{ qualifiedName: 'shop.cart.BaseCart.count', kind: 'method', path: 'shop/cart.py', line: 15 }] }];
    const { sent, connection } = recordingConnection((m) => (m === 'codesynapse/search' ? recorded('search') : answer));
    const panel = new ContextPanel(vscode.Uri.file('/ext') as never);
    await new ContextController(connection, panel, {} as IndexStatusBar, log).task('apply a discount');
    expect(sent.map((r) => r.method)).toEqual(['codesynapse/minimalContext', 'codesynapse/search']);
    const listed = [...panel.html.matchAll(/data-action="add" data-selector="([^"]+)"/g)].map((m) => m[1]);
    expect(listed).toHaveLength(3);
    expect(listed[0]).toBe('shop.cart.BaseCart.count'); // the server's first, then search results not shown
    expect(new Set(listed).size).toBe(3);
  });

  it('uses the names the server lists with an omission instead of searching', async () => {
    const answer = { ...recorded('minimalContext') };
    answer.omitted = [{ what: 'weaker candidates', count: 2, hint: 'name an identifier', 'weaker candidates': ['shop.cart', 'test_cart.test_total'] }];
    const { sent, connection } = recordingConnection(() => answer);
    const panel = new ContextPanel(vscode.Uri.file('/ext') as never);
    await new ContextController(connection, panel, {} as IndexStatusBar, log).task('apply a discount');
    expect(sent.map((r) => r.method)).toEqual(['codesynapse/minimalContext']);
    expect([...panel.html.matchAll(/data-action="add" data-selector="([^"]+)"/g)].map((m) => m[1])).toEqual(['shop.cart', 'test_cart.test_total']);
  });

  it('sends unsaved buffers in the diff of the current changes, and marks the answer stale when a file changes', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cs-prctx-'));
    fs.cpSync(path.resolve(__dirname, '../../../fixtures/python_repo/shop'), path.join(root, 'shop'), { recursive: true });
    const git = (...args: string[]) => execFileSync('git', args, { cwd: root, stdio: 'pipe' });
    git('init', '-q', '-b', 'main');
    git('add', '.');
    git('-c', 'user.email=t@example.invalid', '-c', 'user.name=t', '-c', 'commit.gpgsign=false', 'commit', '-qm', 'init');
    vscode.workspace.workspaceFolders = [{ uri: vscode.Uri.file(root), name: 'ws', index: 0 }];
    // Nothing changed on disk; pricing.py has an unsaved edit in the editor.
    const file = path.join(root, 'shop', 'pricing.py');
    const edited = fs.readFileSync(file, 'utf8').replace('TAX_RATE), 2)', 'TAX_RATE), 3)');
    vscode.workspace.textDocuments = [{ isDirty: true, uri: vscode.Uri.file(file), getText: () => edited }];
    const { sent, connection } = recordingConnection(() => recorded('prContext'));
    const panel = new ContextPanel(vscode.Uri.file('/ext') as never);
    const controller = new ContextController(connection, panel, {} as IndexStatusBar, log);

    await controller.diff();
    expect(sent).toHaveLength(1);
    const diff = String(sent[0]?.params.diff);
    expect(diff.match(/^diff --git .*$/gm)).toEqual(['diff --git a/shop/pricing.py b/shop/pricing.py']);
    expect(diff).toContain('-    return round(amount * (1 + TAX_RATE), 2)\n+    return round(amount * (1 + TAX_RATE), 3)\n');
    expect(panel.html).toMatch(/<p class="subtitle" title="[^"]*">1 changed file \(1 unsaved\), \d+ bytes of diff<\/p>/);
    expect(panel.html).not.toContain('class="stale"');

    // A further edit: the answer is kept but marked as possibly out of date, with Refresh.
    vscode.documentChanged.fire({ document: { uri: vscode.Uri.file(file) }, contentChanges: [{ text: 'x' }] });
    await new Promise((r) => setTimeout(r, 0));
    expect(panel.html).toContain(
      '<div class="stale" role="status"><span class="stale-text">shop/pricing.py was edited after this answer; it may be out of date.</span> <button class="refresh" data-action="refresh">Refresh</button></div>',
    );
    // Refresh recomputes the diff from the buffers as they are now.
    const again = edited.replace('TAX_RATE = 0.2', 'TAX_RATE = 0.25');
    vscode.workspace.textDocuments = [{ isDirty: true, uri: vscode.Uri.file(file), getText: () => again }];
    panel['messageEmitter'].fire({ type: 'refresh' });
    await vi.waitFor(() => expect(sent).toHaveLength(2));
    expect(String(sent[1]?.params.diff)).toContain('+TAX_RATE = 0.25');
    await vi.waitFor(() => expect(panel.html).not.toContain('class="stale"'));
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('lists memory with a Delete button per entity, and forgets one after the user confirms', async () => {
    const { sent, connection } = recordingConnection((m) => recorded(m === 'codesynapse/memory/forget' ? 'forget' : 'list'));
    const panel = new ContextPanel(vscode.Uri.file('/ext') as never);
    const controller = new ContextController(connection, panel, {} as IndexStatusBar, log);
    await controller.showMemory();
    expect(sent).toEqual([{ method: 'codesynapse/memory/list', params: { includeIds: true } }]);
    // the recorded list: two durable entities with one fact each
    const id = ((recorded('list').entries as { name: string; id: string }[]).find((e) => e.name === 'shop.cart.Cart.total') as { id: string }).id;
    expect(panel.html).toContain('<h3>Remembered (2)</h3>');
    expect(panel.html).toContain(
      '<li class="memory-entry" data-name="shop.cart.Cart.total"><span class="memory-name" title="shop.cart.Cart.total">shop.cart.Cart.total</span> <span class="kind">symbol</span> <span class="badge scope">durable</span> <span class="muted">1 fact</span> ' +
        `<button class="forget" data-action="forget" data-name="shop.cart.Cart.total" data-id="${id}" title="Forget shop.cart.Cart.total and its facts">Delete</button></li>`,
    );
    expect(panel.html.replace(/<[^>]*>/g, '')).not.toMatch(/Created at|Next cursor|mem_/);

    vscode.answers.message.push(undefined); // the user closes the confirmation: nothing is forgotten
    await controller.forget('shop.cart.Cart.total', id);
    expect(sent).toHaveLength(1);
    vscode.answers.message.push('Forget');
    await controller.forget('shop.cart.Cart.total', id);
    expect(vscode.messages.at(-1)).toEqual({ level: 'warning', text: 'Forget "shop.cart.Cart.total" and all its facts?', actions: ['Forget'] });
    expect(sent.slice(1)).toEqual([
      { method: 'codesynapse/memory/forget', params: { ids: [id] } },
      { method: 'codesynapse/memory/list', params: { includeIds: true } },
    ]);
  });

  it('shows a recall as entries and sentences, not field dumps', async () => {
    const { sent, connection } = recordingConnection(() => recorded('recall'));
    const panel = new ContextPanel(vscode.Uri.file('/ext') as never);
    await new ContextController(connection, panel, {} as IndexStatusBar, log).recall('Cart.total');
    expect(sent).toEqual([{ method: 'codesynapse/memory/recall', params: { query: 'Cart.total', includeIds: true } }]);
    const body = panel.html.slice(panel.html.indexOf('<div class="body">'), panel.html.indexOf('<details class="diagnostics">'));
    expect(body.replace(/<[^>]*>/g, '|').replace(/\|+/g, '|')).toBe(
      '|Remembered (2)|shop.cart.Cart.total| |symbol| |durable| |Delete|def total(self, percent=0):| |durable| |Delete|Facts (1)|shop.cart.Cart.total| |note| |def total(self, percent=0):|' +
        'Supplied by agents and clients, not verified against the code: check the source.|',
    );
  });
});
