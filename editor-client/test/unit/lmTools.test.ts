import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import * as vscode from './vscode.mock';
import type { ServerConnection } from '../../src/client';
import { readSettings } from '../../src/config';
import { compact, registerLanguageModelTools, TOOLS } from '../../src/lmTools';

const settings = readSettings({ get: () => undefined }).settings;
const log = { info: () => undefined, warn: () => undefined, debug: () => undefined, error: () => undefined } as never;

beforeEach(() => vscode.resetMock());

describe('tool parameters', () => {
  it('fills budgets and call-graph defaults from the settings', async () => {
    expect(await TOOLS.codesynapse_call_graph!.params({ selector: 'calc.ops.add', direction: 'callers' }, settings, undefined)).toEqual({
      selector: 'calc.ops.add',
      direction: 'callers',
      depth: 2,
      limit: 25,
      maxTokens: 20000,
    });
    expect(await TOOLS.codesynapse_minimal_context!.params({ task: 'fix add', maxTokens: 99999 }, settings, undefined)).toEqual({
      task: 'fix add',
      maxTokens: 20000,
    });
    expect(await TOOLS.codesynapse_symbol_card!.params({ selector: ' add ' }, settings, undefined)).toEqual({ selector: 'add', maxTokens: 2000 });
  });

  it('rejects bad input with a message the model can act on', async () => {
    await expect(async () => TOOLS.codesynapse_call_graph!.params({ selector: 'x', direction: 'up' }, settings, undefined)).rejects.toThrow(
      '"direction" must be "callers", "callees" or "both"',
    );
    await expect(async () => TOOLS.codesynapse_symbol_context!.params({}, settings, undefined)).rejects.toThrow('"selector" must be a non-empty string');
    await expect(async () => TOOLS.codesynapse_remember!.params({ facts: [] }, settings, undefined)).rejects.toThrow('pass at least one entity or fact');
  });

  it('marks remembered facts as coming from an agent', async () => {
    expect(
      await TOOLS.codesynapse_remember!.params({ facts: [{ subject: 'Cart', predicate: 'decided', object: 'use Decimal', sourceClient: 'x' }] }, settings, undefined),
    ).toEqual({ entities: [], facts: [{ subject: 'Cart', predicate: 'decided', object: 'use Decimal', sourceClient: 'vscode-agent' }] });
  });

  it('takes the current git diff when no diff or revisions are given', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cs-tool-git-'));
    try {
      const git = (...a: string[]) => execFileSync('git', a, { cwd: dir, stdio: 'pipe' });
      git('init', '-q');
      git('config', 'user.email', 't@example.invalid');
      git('config', 'user.name', 'T');
      fs.writeFileSync(path.join(dir, 'm.py'), 'A = 1\n');
      git('add', '.');
      git('commit', '-qm', 'i');
      fs.writeFileSync(path.join(dir, 'm.py'), 'A = 2\n');
      const params = await TOOLS.codesynapse_pr_context!.params({}, settings, dir);
      expect(params).toMatchObject({ maxTokens: 20000 });
      expect((params as { diff: string }).diff).toContain('-A = 1\n+A = 2\n');
      expect(compact(await TOOLS.codesynapse_pr_context!.params({ base: 'main', head: 'HEAD' }, settings, dir))).toEqual({
        base: 'main',
        head: 'HEAD',
        maxTokens: 20000,
      });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('registerLanguageModelTools', () => {
  it('registers every tool and answers with the server result as JSON text', async () => {
    const sent: { method: string; params: unknown }[] = [];
    // A stand-in for the server connection: records the request and answers a fixed card.
    const connection = {
      request: (method: string, params: unknown) => {
        sent.push({ method, params });
        return Promise.resolve({ qualifiedName: 'calc.ops.add', tokens: 60, maxTokens: 2000 });
      },
    } as unknown as ServerConnection;
    const disposables = registerLanguageModelTools(connection, log);
    expect(disposables).toHaveLength(9);
    expect([...vscode.registeredTools.keys()].sort()).toEqual(Object.keys(TOOLS).sort());

    const tool = vscode.registeredTools.get('codesynapse_symbol_card')!;
    expect(tool.prepareInvocation?.({ input: { selector: 'add' } })).toEqual({ invocationMessage: 'CodeSynapse: symbol card of add' });
    const result = (await tool.invoke({ input: { selector: 'add', maxTokens: 300 } }, undefined)) as vscode.LanguageModelToolResult;
    expect(sent).toEqual([{ method: 'codesynapse/symbolCard', params: { selector: 'add', maxTokens: 300 } }]);
    expect(result.content).toEqual([new vscode.LanguageModelTextPart('{"qualifiedName":"calc.ops.add","tokens":60,"maxTokens":2000}')]);
    for (const d of disposables) d.dispose();
    expect(vscode.registeredTools.size).toBe(0);
  });
});
