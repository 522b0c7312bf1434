/**
 * Language-model tools: the context and memory requests, callable by agents in VS Code.
 *
 * `vscode.lm.registerTool` is stable API since VS Code 1.95, which is why `engines.vscode`
 * is ^1.95.0 (vscode-languageclient 9 alone would run on 1.82). Every tool is declared in
 * package.json `contributes.languageModelTools` with the same name.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ServerConnection } from './client';
import { currentSettings, type Settings } from './config';
import { currentDiff } from './git';
import {
  MAX_RECALL_QUERY_BYTES,
  Methods,
  clampTokens,
  isRecord,
  type Method,
  type ParamsByMethod,
} from './protocol';
import { taskParams, truncateUtf8 } from './queries';
import { answerFiguresText, readLastAnswer } from './savings';

type Input = Record<string, unknown>;

export interface ToolSpec<M extends Method = Method> {
  method: M;
  /** Build request params from the model's input; throws an Error with a message for the model on bad input. */
  params(input: Input, settings: Settings, cwd: string | undefined): Promise<ParamsByMethod[M]> | ParamsByMethod[M];
  describe(input: Input): string;
}

function requireString(input: Input, key: string): string {
  const v = input[key];
  if (typeof v !== 'string' || !v.trim()) throw new Error(`"${key}" must be a non-empty string`);
  return v.trim();
}

function optInt(input: Input, key: string): number | undefined {
  const v = input[key];
  return typeof v === 'number' && Number.isFinite(v) ? Math.round(v) : undefined;
}

function budget(input: Input, fallback: number): number {
  return clampTokens(optInt(input, 'maxTokens') ?? fallback);
}

function oneOf<T extends string>(input: Input, key: string, allowed: readonly T[]): T | undefined {
  const v = input[key];
  return typeof v === 'string' && (allowed as readonly string[]).includes(v) ? (v as T) : undefined;
}

export const TOOLS: Record<string, ToolSpec> = {
  codesynapse_symbol_card: {
    method: Methods.symbolCard,
    params: (i, s) => ({ selector: requireString(i, 'selector'), maxTokens: budget(i, s.budgets.symbolCard) }),
    describe: (i) => `symbol card of ${String(i.selector)}`,
  },
  codesynapse_symbol_context: {
    method: Methods.symbolContext,
    params: (i, s) => ({ selector: requireString(i, 'selector'), maxTokens: budget(i, s.budgets.symbolContext) }),
    describe: (i) => `context of ${String(i.selector)}`,
  },
  codesynapse_call_graph: {
    method: Methods.callGraph,
    params: (i, s) => {
      const direction = oneOf(i, 'direction', ['callers', 'callees', 'both'] as const);
      if (!direction) throw new Error('"direction" must be "callers", "callees" or "both"');
      return {
        selector: requireString(i, 'selector'),
        direction,
        depth: optInt(i, 'depth') ?? s.callGraphDepth,
        limit: optInt(i, 'limit') ?? s.callGraphLimit,
        maxTokens: budget(i, s.budgets.callGraph),
      };
    },
    describe: (i) => `${typeof i.direction === 'string' ? i.direction : 'calls'} of ${String(i.selector)}`,
  },
  codesynapse_minimal_context: {
    method: Methods.minimalContext,
    params: (i, s) => {
      const paths = Array.isArray(i.paths) ? i.paths.filter((p): p is string => typeof p === 'string') : undefined;
      return taskParams(requireString(i, 'task'), budget(i, s.budgets.minimalContext), paths).params;
    },
    describe: () => 'context for the task',
  },
  codesynapse_pr_context: {
    method: Methods.prContext,
    params: async (i, s, cwd) => {
      const maxTokens = budget(i, s.budgets.prContext);
      const diff = typeof i.diff === 'string' && i.diff.trim() ? i.diff : undefined;
      const base = typeof i.base === 'string' && i.base.trim() ? i.base.trim() : undefined;
      const head = typeof i.head === 'string' && i.head.trim() ? i.head.trim() : undefined;
      if (diff || base || head) return { diff, base, head, maxTokens };
      if (!cwd) throw new Error('no workspace folder is open, so there is no git diff; pass "diff" or "base"/"head"');
      const d = await currentDiff(cwd, undefined, unsavedBuffers(cwd));
      if (!d.ok) throw new Error(d.message);
      return { diff: d.diff, maxTokens };
    },
    describe: (i) =>
      typeof i.base === 'string' || typeof i.head === 'string'
        ? `impact of ${typeof i.base === 'string' ? i.base : ''}..${typeof i.head === 'string' ? i.head : ''}`
        : 'impact of the current changes',
  },
  codesynapse_search: {
    method: Methods.search,
    params: (i) => ({
      query: requireString(i, 'query'),
      mode: oneOf(i, 'mode', ['full', 'compact', 'summary'] as const),
      limit: optInt(i, 'limit'),
      offset: optInt(i, 'offset'),
    }),
    describe: (i) => `search for ${String(i.query)}`,
  },
  codesynapse_snippet: {
    method: Methods.snippet,
    params: (i) => ({
      selector: requireString(i, 'selector'),
      mode: oneOf(i, 'mode', ['signature', 'head_tail', 'full'] as const),
      maxLines: optInt(i, 'maxLines'),
    }),
    describe: (i) => `source of ${String(i.selector)}`,
  },
  codesynapse_recall: {
    method: Methods.recall,
    params: (i) => ({ query: truncateUtf8(requireString(i, 'query'), MAX_RECALL_QUERY_BYTES).text }),
    describe: (i) => `recall ${String(i.query)}`,
  },
  codesynapse_memory_list: {
    method: Methods.listMemory,
    params: (i) => {
      const durable = typeof i.durable === 'boolean' ? i.durable : undefined;
      const cursor = typeof i.cursor === 'string' && i.cursor ? i.cursor : undefined;
      return { durable, cursor, limit: optInt(i, 'limit'), includeIds: true };
    },
    describe: (i) => (i.durable === true ? 'list durable memory' : i.durable === false ? 'list this session\'s memory' : 'list memory'),
  },
  codesynapse_forget: {
    method: Methods.forget,
    params: (i) => {
      const names = Array.isArray(i.names) ? i.names.filter((n): n is string => typeof n === 'string' && n.trim() !== '') : [];
      const ids = Array.isArray(i.ids) ? i.ids.filter((n): n is string => typeof n === 'string' && n.trim() !== '') : [];
      if (names.length === 0 && ids.length === 0) throw new Error('pass "names" or "ids" of the entities to forget');
      return { ...(names.length ? { names } : {}), ...(ids.length ? { ids } : {}) };
    },
    describe: (i) => {
      const list = (v: unknown): unknown[] => (Array.isArray(v) ? (v as unknown[]) : []);
      return `forget ${[...list(i.names), ...list(i.ids)].map(String).join(', ')}`;
    },
  },
  codesynapse_remember: {
    method: Methods.remember,
    params: (i) => {
      const entities = Array.isArray(i.entities) ? i.entities.filter(isRecord) : [];
      const facts = Array.isArray(i.facts) ? i.facts.filter(isRecord) : [];
      if (entities.length === 0 && facts.length === 0) throw new Error('pass at least one entity or fact');
      return {
        entities: entities.map((e) => ({ ...e, name: requireString(e, 'name') })),
        facts: facts.map((f) => ({
          ...f,
          subject: requireString(f, 'subject'),
          predicate: requireString(f, 'predicate'),
          object: requireString(f, 'object'),
          sourceClient: 'vscode-agent',
        })),
      };
    },
    describe: (i) => `remember ${Array.isArray(i.facts) ? i.facts.length : 0} fact(s)`,
  },
};

/** Unsaved editor buffers under `cwd`: the diff of the current changes uses their text. */
function unsavedBuffers(cwd: string): { path: string; text: string }[] {
  return vscode.workspace.textDocuments
    .filter((doc) => doc.isDirty && doc.uri.scheme === 'file' && doc.uri.fsPath.startsWith(cwd + path.sep))
    .map((doc) => ({ path: path.relative(cwd, doc.uri.fsPath), text: doc.getText() }));
}

/** The server's request names, as the hints in its answers write them, and the tool for each. */
const TOOL_FOR_METHOD: Readonly<Record<string, string>> = {
  symbolCard: 'codesynapse_symbol_card',
  symbolContext: 'codesynapse_symbol_context',
  callGraph: 'codesynapse_call_graph',
  minimalContext: 'codesynapse_minimal_context',
  prContext: 'codesynapse_pr_context',
  search: 'codesynapse_search',
  snippet: 'codesynapse_snippet',
  'memory/recall': 'codesynapse_recall',
  'memory/remember': 'codesynapse_remember',
  'memory/list': 'codesynapse_memory_list',
  'memory/forget': 'codesynapse_forget',
};

/** Keys whose text tells the reader what to ask next. */
const HINT_KEYS = new Set(['hint', 'hints', 'followUp', 'howToGetMore', 'next']);

/**
 * An answer for a model, with the server's request names in its hints replaced by the tool
 * names the model can call ("ask its symbolCard" → "ask its codesynapse_symbol_card").
 * Bare words that are also plain English ("search the words") are replaced only when written
 * as a request (`codesynapse/search`).
 */
export function withToolNames(value: unknown, key = ''): unknown {
  if (typeof value === 'string') {
    if (!HINT_KEYS.has(key)) return value;
    return value
      .replace(/\bcodesynapse\/(memory\/(?:recall|remember|list|forget)|[A-Za-z]+)\b/g, (m, name: string) => TOOL_FOR_METHOD[name] ?? m)
      .replace(/\b(symbolCard|symbolContext|callGraph|minimalContext|prContext)\b/g, (m, name: string) => TOOL_FOR_METHOD[name] ?? m);
  }
  if (Array.isArray(value)) return value.map((v) => withToolNames(v, key));
  if (isRecord(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withToolNames(v, HINT_KEYS.has(key) ? key : k)]));
  return value;
}

/** Drop undefined fields so the server sees only what was given. */
export function compact<T extends object>(params: T): T {
  return Object.fromEntries(Object.entries(params).filter(([, v]) => v !== undefined)) as T;
}

/**
 * The ledger's figures of the answer just received (tokens, raw context (a) and (b), cache-hit),
 * as the status bar and the panel count them; null when the ledger cannot say (an older
 * server, or another request answered in between).
 */
export async function answerFigures(connection: Pick<ServerConnection, 'request'>, method: Method): Promise<string | null> {
  try {
    const f = readLastAnswer(await connection.request(Methods.ledger, { last: 1 }), method);
    return f ? answerFiguresText(f) : null;
  } catch {
    return null;
  }
}

export function registerLanguageModelTools(connection: ServerConnection, log: vscode.LogOutputChannel): vscode.Disposable[] {
  const lm = (vscode as { lm?: typeof vscode.lm }).lm;
  if (!lm || typeof lm.registerTool !== 'function') {
    log.info('this VS Code has no language-model tool API; agent tools are not registered');
    return [];
  }
  const disposables: vscode.Disposable[] = [];
  for (const [name, spec] of Object.entries(TOOLS)) {
    disposables.push(
      lm.registerTool<Input>(name, {
        prepareInvocation: (options) => ({
          invocationMessage: `CodeSynapse: ${spec.describe(options.input ?? {})}`,
          // deleting memory is confirmed by the user first
          ...(name === 'codesynapse_forget'
            ? { confirmationMessages: { title: 'Forget memory?', message: `CodeSynapse: ${spec.describe(options.input ?? {})} and all their facts.` } }
            : {}),
        }),
        invoke: async (options, token) => {
          const { settings } = currentSettings();
          const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
          const params = compact(await spec.params(options.input ?? {}, settings, cwd));
          const result = await connection.request(spec.method, params, token);
          const parts = [new vscode.LanguageModelTextPart(JSON.stringify(withToolNames(result)))];
          const figures = await answerFigures(connection, spec.method);
          if (figures) parts.push(new vscode.LanguageModelTextPart(figures));
          return new vscode.LanguageModelToolResult(parts);
        },
      }),
    );
  }
  log.info(`registered ${disposables.length} language-model tools`);
  return disposables;
}
