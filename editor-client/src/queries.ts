/**
 * Pure helpers for building requests: selectors, input caps and "load more".
 * No `vscode` import, so they are unit-tested directly.
 */
import {
  MAX_CALL_LIMIT,
  MAX_SELECTOR_BYTES,
  MAX_TASK_BYTES,
  MAX_TOKENS,
  Methods,
  clampTokens,
  type CallGraphParams,
  type Method,
  type ParamsByMethod,
  type Selector,
} from './protocol';

/** One request the panel shows, kept so that it can be asked again with a larger budget. */
export interface Query<M extends Method = Method> {
  title: string;
  subtitle: string;
  method: M;
  params: ParamsByMethod[M];
}

const IDENTIFIER_PATH = /^[A-Za-z_$][\w$]*(?:(?:\.|::|#|\/)[A-Za-z_$][\w$]*)*$/;

/** A selection that is one identifier or dotted name is used as a name selector. */
export function nameFromSelection(text: string): string | null {
  const t = text.trim();
  if (!t || t.length > 512 || /\s/.test(t)) return null;
  return IDENTIFIER_PATH.test(t) ? t : null;
}

export function describeSelector(selector: Selector, relativePath?: (uri: string) => string): string {
  if (typeof selector === 'string') return selector;
  const where = relativePath ? relativePath(selector.uri) : selector.uri;
  return `${where}:${selector.line + 1}:${selector.character + 1}`;
}

export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** Cut text to at most `maxBytes` UTF-8 bytes without splitting a character. */
export function truncateUtf8(text: string, maxBytes: number): { text: string; truncated: boolean } {
  if (utf8Bytes(text) <= maxBytes) return { text, truncated: false };
  const buf = Buffer.from(text, 'utf8').subarray(0, maxBytes);
  let out = buf.toString('utf8');
  // A cut inside a multi-byte character decodes to U+FFFD at the end; drop it.
  while (out.endsWith('\uFFFD')) out = out.slice(0, -1);
  return { text: out, truncated: true };
}

export function checkSelector(selector: Selector): string | null {
  if (typeof selector === 'string' && utf8Bytes(selector) > MAX_SELECTOR_BYTES) {
    return `The symbol name is longer than ${MAX_SELECTOR_BYTES} bytes.`;
  }
  return null;
}

export function taskParams(task: string, budget: number, paths?: string[]): { params: ParamsByMethod[typeof Methods.minimalContext]; truncated: boolean } {
  const t = truncateUtf8(task.trim(), MAX_TASK_BYTES);
  const params: ParamsByMethod[typeof Methods.minimalContext] = { task: t.text, maxTokens: clampTokens(budget) };
  if (paths && paths.length > 0) params.paths = paths.slice(0, 100);
  return { params, truncated: t.truncated };
}

export const CALL_LIMIT_MAX = MAX_CALL_LIMIT;

/**
 * The next, larger request for "load more": double the budget up to the server's maximum;
 * a call graph already at the maximum budget doubles its node limit instead. Null when
 * nothing can grow, or when `budgetHelps` is false (what was left out does not depend on the
 * budget: see `budgetCanHelp`).
 */
export function loadMoreQuery(query: Query, budgetHelps = true): { query: Query; label: string } | null {
  const params = query.params as { maxTokens?: number };
  const budget = typeof params.maxTokens === 'number' ? params.maxTokens : null;
  if (budget !== null && budget < MAX_TOKENS && budgetHelps) {
    const next = clampTokens(budget * 2);
    return {
      query: { ...query, params: { ...query.params, maxTokens: next } },
      label: `Load more (budget ${next.toLocaleString('en-US')} tokens)`,
    };
  }
  if (query.method === Methods.callGraph) {
    const cg = query.params as CallGraphParams;
    const limit = cg.limit ?? 25;
    if (limit < CALL_LIMIT_MAX) {
      const next = Math.min(CALL_LIMIT_MAX, limit * 2);
      return {
        query: { ...query, params: { ...cg, limit: next } },
        label: `Load more (up to ${next} per direction)`,
      };
    }
  }
  return null;
}

/** The budget a query asked for, if it is a budgeted request. */
export function queryBudget(query: Query): number | null {
  const params = query.params as { maxTokens?: unknown };
  return typeof params.maxTokens === 'number' ? params.maxTokens : null;
}
