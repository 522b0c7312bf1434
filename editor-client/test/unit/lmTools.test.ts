import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import * as vscode from './vscode.mock';
import type { ServerConnection } from '../../src/client';
import { readSettings } from '../../src/config';
import { compact, registerLanguageModelTools, TOOLS, withToolNames } from '../../src/lmTools';

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
  it('registers every tool and answers with the server result as JSON text, and the ledger\'s figures of it', async () => {
    const sent: { method: string; params: unknown }[] = [];
    // A stand-in for the server connection: records the request and answers a fixed card
    // (and, asked for the ledger, that card's row)
    const connection = {
      request: (method: string, params: unknown) => {
        sent.push({ method, params });
        if (method === 'codesynapse/ledger') {
          return Promise.resolve({ session: {}, last: [{ method: 'codesynapse/symbolCard', tokens: 80, cacheHitTokens: 0, rawA: 900, rawB: 450 }] });
        }
        return Promise.resolve({ qualifiedName: 'calc.ops.add', tokens: 60, maxTokens: 2000 });
      },
    } as unknown as ServerConnection;
    const disposables = registerLanguageModelTools(connection, log);
    expect(disposables).toHaveLength(11);
    expect([...vscode.registeredTools.keys()].sort()).toEqual(Object.keys(TOOLS).sort());

    const tool = vscode.registeredTools.get('codesynapse_symbol_card')!;
    expect(tool.prepareInvocation?.({ input: { selector: 'add' } })).toEqual({ invocationMessage: 'CodeSynapse: symbol card of add' });
    const result = (await tool.invoke({ input: { selector: 'add', maxTokens: 300 } }, undefined)) as vscode.LanguageModelToolResult;
    expect(sent).toEqual([
      { method: 'codesynapse/symbolCard', params: { selector: 'add', maxTokens: 300 } },
      { method: 'codesynapse/ledger', params: { last: 1 } },
    ]);
    expect(result.content).toEqual([
      new vscode.LanguageModelTextPart('{"qualifiedName":"calc.ops.add","tokens":60,"maxTokens":2000}'),
      new vscode.LanguageModelTextPart(
        'CodeSynapse ledger: this answer is 80 tokens; raw context for the same answer: (a) files behind it 900 tokens, ' +
          '(b) grep + files opened 450 tokens; 0 tokens repeat earlier answers of this session (cache-hit).',
      ),
    ]);
    for (const d of disposables) d.dispose();
    expect(vscode.registeredTools.size).toBe(0);
  });
});

describe('memory tools and hints for models', () => {
  it('lists memory with ids, and forgets by name or id after the user confirms', async () => {
    expect(TOOLS.codesynapse_memory_list!.method).toBe('codesynapse/memory/list');
    expect(compact(await TOOLS.codesynapse_memory_list!.params({ durable: true, limit: 20 }, settings, undefined))).toEqual({ durable: true, limit: 20, includeIds: true });
    expect(await TOOLS.codesynapse_forget!.params({ names: ['Cart', ' '], ids: ['mem_94c9cb80fe5eee3c545b9de0'] }, settings, undefined)).toEqual({
      names: ['Cart'],
      ids: ['mem_94c9cb80fe5eee3c545b9de0'],
    });
    await expect(async () => TOOLS.codesynapse_forget!.params({}, settings, undefined)).rejects.toThrow('pass "names" or "ids" of the entities to forget');
    registerLanguageModelTools({ request: () => Promise.resolve({}) } as unknown as ServerConnection, log);
    const forget = vscode.registeredTools.get('codesynapse_forget')!;
    expect(forget.prepareInvocation?.({ input: { names: ['Cart'] } })).toEqual({
      invocationMessage: 'CodeSynapse: forget Cart',
      confirmationMessages: { title: 'Forget memory?', message: 'CodeSynapse: forget Cart and all their facts.' },
    });
  });

  it('names tools, not server requests, in the hints of an answer', () => {
    const answer = {
      omitted: [{ what: 'callers', count: 3, hint: 'raise maxTokens, or ask its symbolCard' }],
      followUp: 'no indexed symbol matches the task; use codesynapse/search or codesynapse/memory/recall',
      related: [{ qualifiedName: 'a.symbolCard', hint: 'see callGraph' }],
      summary: 'symbolCard stays as written outside hints',
    };
    expect(withToolNames(answer)).toEqual({
      omitted: [{ what: 'callers', count: 3, hint: 'raise maxTokens, or ask its codesynapse_symbol_card' }],
      followUp: 'no indexed symbol matches the task; use codesynapse_search or codesynapse_recall',
      related: [{ qualifiedName: 'a.symbolCard', hint: 'see codesynapse_call_graph' }],
      summary: 'symbolCard stays as written outside hints',
    });
    // the recorded task answer's hint ("search the words") is plain English and stays
    const task = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', 'minimalContext.json'), 'utf8')) as unknown;
    expect(withToolNames(task)).toEqual(task);
  });

  it('describes every input field of every tool', () => {
    const pkg = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../package.json'), 'utf8')) as {
      contributes: { languageModelTools: { name: string; inputSchema: Record<string, unknown> }[] };
    };
    const missing: string[] = [];
    const walk = (schema: Record<string, unknown>, at: string): void => {
      const props = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
      for (const [k, v] of Object.entries(props)) {
        if (typeof v.description !== 'string' || !v.description) missing.push(`${at}.${k}`);
        if (v.type === 'array' && typeof v.items === 'object' && v.items !== null) walk(v.items as Record<string, unknown>, `${at}.${k}[]`);
      }
    };
    for (const t of pkg.contributes.languageModelTools) walk(t.inputSchema, t.name);
    expect(missing).toEqual([]);
  });
});

