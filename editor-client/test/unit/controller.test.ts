import { beforeEach, describe, expect, it } from 'vitest';
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

describe('ContextController', () => {
  it('shows a card with its meter, then asks again with double the budget on "load more"', async () => {
    vscode.settingsStore.set('codesynapse.budget.symbolCard', 1000);
    const { sent, connection } = recordingConnection((_m, p) => ({
      qualifiedName: 'calc.ops.add',
      kind: 'function',
      tokens: 700,
      maxTokens: p.maxTokens,
      rawTokens: 3000,
      omitted: p.maxTokens === 1000 ? [{ what: 'callers', count: 3, hint: 'raise maxTokens' }] : [],
    }));
    const panel = new ContextPanel(vscode.Uri.file('/ext') as never);
    const controller = new ContextController(connection, panel, {} as IndexStatusBar, log);

    await controller.symbolCard('calc.ops.add');
    expect(sent).toEqual([{ method: 'codesynapse/symbolCard', params: { selector: 'calc.ops.add', maxTokens: 1000 } }]);
    expect(panel.html).toContain('data-tokens="700" data-budget="1000" data-raw="3000"');
    expect(panel.html).toContain('700 of 1,000 tokens (70% of budget) · raw files 3,000 tokens · 76.7% saved');
    expect(panel.html).toContain('<button class="more" data-action="more">Load more (budget 2,000 tokens)</button>');
    expect(vscode.executedCommands.map((c) => c.command)).toContain('codesynapse.context.focus');

    await controller.loadMore();
    expect(sent[1]).toEqual({ method: 'codesynapse/symbolCard', params: { selector: 'calc.ops.add', maxTokens: 2000 } });
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
});
