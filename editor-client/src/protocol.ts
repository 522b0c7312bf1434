/**
 * The custom requests of the CodeSynapse server, in one place.
 *
 * Method names, parameter shapes and the result shapes the views read are declared here and
 * nowhere else, so aligning with a changed server means editing this module. Results are
 * typed loosely on purpose (`unknown` plus optional known fields): the panel renders whatever
 * arrives, and the normalizers below turn an unknown value into the few shapes the views need
 * without ever throwing.
 */

export const Methods = {
  indexStatus: 'codesynapse/indexStatus',
  symbolCard: 'codesynapse/symbolCard',
  symbolContext: 'codesynapse/symbolContext',
  callGraph: 'codesynapse/callGraph',
  minimalContext: 'codesynapse/minimalContext',
  prContext: 'codesynapse/prContext',
  search: 'codesynapse/search',
  snippet: 'codesynapse/snippet',
  remember: 'codesynapse/memory/remember',
  recall: 'codesynapse/memory/recall',
  forget: 'codesynapse/memory/forget',
  listMemory: 'codesynapse/memory/list',
  ledger: 'codesynapse/ledger',
  policyEffects: 'codesynapse/policyEffects',
} as const;

export type Method = (typeof Methods)[keyof typeof Methods];

/** Budgets the server accepts (DESIGN.md "Budgets and limits"): any maxTokens is normalized to this range. */
export const MIN_TOKENS = 256;
export const MAX_TOKENS = 20_000;
/** Input caps of the server; the client trims or refuses before sending. */
export const MAX_TASK_BYTES = 8 * 1024;
export const MAX_SELECTOR_BYTES = 4 * 1024;
export const MAX_DIFF_BYTES = 4 * 1024 * 1024;
export const MAX_PATHS = 100;
export const MAX_RECALL_QUERY_BYTES = 4 * 1024;
/** Largest call-graph node limit per direction the server accepts (it clamps larger ones). */
export const MAX_CALL_LIMIT = 200;

/** A symbol named by qualified or bare name, or the symbol at an LSP position (0-based line and character). */
export type PositionSelector = { uri: string; line: number; character: number };
export type Selector = string | PositionSelector;

export interface SymbolCardParams {
  selector: Selector;
  maxTokens?: number;
}
export interface SymbolContextParams {
  selector: Selector;
  maxTokens?: number;
}
export type CallDirection = 'callers' | 'callees' | 'both';
export interface CallGraphParams {
  selector: Selector;
  direction: CallDirection;
  depth?: number;
  limit?: number;
  maxTokens?: number;
}
export interface MinimalContextParams {
  task: string;
  paths?: string[];
  maxTokens?: number;
}
export interface PrContextParams {
  diff?: string;
  base?: string;
  head?: string;
  maxTokens?: number;
}
export interface SearchParams {
  query: string;
  mode?: 'full' | 'compact' | 'summary';
  limit?: number;
  offset?: number;
}
export interface SnippetParams {
  selector: Selector;
  mode?: 'signature' | 'head_tail' | 'full';
  maxLines?: number;
}
export interface MemoryEntityInput {
  name: string;
  aliases?: string[];
  type?: string;
  durable?: boolean;
}
export interface MemoryFactInput {
  subject: string;
  predicate: string;
  object: string;
  confidence?: number;
  sourceClient?: string;
  durable?: boolean;
}
export interface RememberParams {
  entities: MemoryEntityInput[];
  facts: MemoryFactInput[];
}
export interface RecallParams {
  query: string;
  limit?: number;
  hops?: number;
  maxFacts?: number;
  includeIds?: boolean;
}
export interface ForgetParams {
  names?: string[];
  ids?: string[];
  facts?: { subject: string; predicate: string; object: string }[];
}
export interface ListMemoryParams {
  durable?: boolean;
  cursor?: string;
  limit?: number;
  includeIds?: boolean;
}

export interface ParamsByMethod {
  [Methods.indexStatus]: Record<string, never>;
  [Methods.symbolCard]: SymbolCardParams;
  [Methods.symbolContext]: SymbolContextParams;
  [Methods.callGraph]: CallGraphParams;
  [Methods.minimalContext]: MinimalContextParams;
  [Methods.prContext]: PrContextParams;
  [Methods.search]: SearchParams;
  [Methods.snippet]: SnippetParams;
  [Methods.remember]: RememberParams;
  [Methods.recall]: RecallParams;
  [Methods.forget]: ForgetParams;
  [Methods.listMemory]: ListMemoryParams;
  [Methods.ledger]: { last?: number };
  [Methods.policyEffects]: Record<string, never>;
}

/** Requests whose answers carry the budget envelope and may be re-asked with a larger budget. */
export const BUDGETED_METHODS: ReadonlySet<Method> = new Set<Method>([
  Methods.symbolCard,
  Methods.symbolContext,
  Methods.callGraph,
  Methods.minimalContext,
  Methods.prContext,
]);

// ---------------------------------------------------------------------------------------------
// Results

export interface IndexStatus {
  files: number;
  symbols: number;
  edges: number;
  languages: Record<string, number>;
  indexedCommit: string | null;
  dirty: boolean;
  openBuffers: string[];
  pending: number;
  lastUpdate: string | null;
  /** "indexing" or "ready" (other values are shown as they come). */
  state: string;
  policyFingerprint: string | null;
}

export interface Omission {
  what: string;
  count: number | null;
  hint: string | null;
  /** Names of what was left out, when the server lists them (under `candidates`, the `what` key, or `items`). */
  items: string[];
  /** The same, with what the server says about each (minimalContext: kind, path, line). */
  listed: ListedSymbol[];
}

/** A symbol named in an answer's omissions or search results. */
export interface ListedSymbol {
  selector: string;
  kind: string | null;
  path: string | null;
  line: number | null;
  summary: string | null;
}

/** The budget envelope every context answer carries. Fields the server did not send are null. */
export interface Envelope {
  tokens: number | null;
  maxTokens: number | null;
  rawTokens: number | null;
  truncated: boolean;
  omitted: Omission[];
  resultBytes: number | null;
  provenance: { legs: string[]; freshness: unknown } | null;
}

/** Keys of the envelope; the views show them in the meter and leave them out of the body. */
export const ENVELOPE_KEYS: ReadonlySet<string> = new Set([
  'tokens',
  'maxTokens',
  'rawTokens',
  'truncated',
  'omitted',
  'provenance',
  'resultBytes',
  '_result_bytes',
  '_est_tokens',
  'estTokens',
]);

/** A reference to a symbol inside a card's callers/callees list. */
export interface SymbolRef {
  label: string;
  selector: string | null;
  path: string | null;
  line: number | null;
  /** A word worth showing beside the name: only for calls that are not certain (unresolved, inferred, external). */
  detail: string | null;
  /** How the call was resolved and how sure the server is, for the tooltip (diagnostics, not shown inline). */
  tooltip?: string;
}

/** Resolutions a reader should see beside a call: the call may not go where it says. */
const NOTABLE_RESOLUTIONS = new Set(['unresolved', 'inferred', 'external', 'name', 'heuristic']);

export interface Card {
  qualifiedName: string | null;
  name: string | null;
  kind: string | null;
  signature: string | null;
  path: string | null;
  startLine: number | null;
  endLine: number | null;
  summary: string | null;
  annotations: string[];
  counts: Record<string, number>;
  callers: SymbolRef[];
  callees: SymbolRef[];
  tests: SymbolRef[];
  /** Retrieval legs that found the card (diagnostics: shown as its tooltip). */
  foundBy: string[];
}

// ---------------------------------------------------------------------------------------------
// Defensive readers: never throw, return null/empty for anything unexpected.

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function asNumber(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

export function asString(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

/**
 * The legs that answered: names, or `{leg, state, reason?}` for a leg that was asked for but could
 * not answer fully (the dense leg while its vectors are computed, or without a model).
 */
function readLegs(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  const out: string[] = [];
  for (const item of value) {
    const name = asString(item);
    if (name !== null) out.push(name);
    else if (isRecord(item) && asString(item.leg) !== null) {
      const state = asString(item.state);
      const reason = asString(item.reason);
      const why = [state, reason].filter((s): s is string => s !== null && s !== '').join(': ');
      out.push(why ? `${asString(item.leg)} (${why})` : (asString(item.leg) as string));
    }
  }
  return out;
}

function asStringList(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  const out: string[] = [];
  for (const item of value) {
    const s = asString(item);
    if (s !== null) out.push(s);
    else if (isRecord(item)) {
      const text = asString(item.text) ?? asString(item.value) ?? asString(item.note) ?? asString(item.name);
      if (text !== null) out.push(text);
    }
  }
  return out;
}

/** Names from a list of strings or of records that carry a `qualifiedName` / `name`. */
function asNameList(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  const out: string[] = [];
  for (const item of value) {
    const s = asString(item) ?? (isRecord(item) ? (asString(item.qualifiedName) ?? asString(item.name)) : null);
    if (s) out.push(s);
  }
  return out;
}

/**
 * True when a larger budget can bring back what was left out: the server's hint for some
 * omission says to raise `maxTokens`, or the answer was cut without saying what it left out.
 * Omissions such as "weaker candidates" ("name an identifier, or search the words") are not
 * a matter of budget, and asking again with twice the budget shows the same answer.
 */
export function budgetCanHelp(env: Envelope): boolean {
  if (env.omitted.length === 0) return env.truncated;
  return env.omitted.some((o) => o.hint === null || /maxTokens|budget/i.test(o.hint));
}

export function readIndexStatus(value: unknown): IndexStatus | null {
  if (!isRecord(value)) return null;
  const languages: Record<string, number> = {};
  if (isRecord(value.languages)) {
    for (const [lang, count] of Object.entries(value.languages)) {
      const n = asNumber(count);
      if (n !== null) languages[lang] = n;
    }
  }
  return {
    files: asNumber(value.files) ?? 0,
    symbols: asNumber(value.symbols) ?? 0,
    edges: asNumber(value.edges) ?? 0,
    languages,
    indexedCommit: asString(value.indexedCommit),
    dirty: value.dirty === true,
    openBuffers: asStringList(value.openBuffers),
    pending: asNumber(value.pending) ?? 0,
    lastUpdate: asString(value.lastUpdate),
    state: asString(value.state) ?? 'ready',
    policyFingerprint: asString(value.policyFingerprint),
  };
}

export function readEnvelope(value: unknown): Envelope {
  const r = isRecord(value) ? value : {};
  const omitted: Omission[] = [];
  if (isRecord(r.omitted)) {
    // e.g. recall: {entries: 2, facts: 0, howToGetMore: "..."}
    const hint = asString(r.omitted.howToGetMore) ?? asString(r.omitted.hint);
    for (const [what, count] of Object.entries(r.omitted)) {
      const n = asNumber(count);
      if (n !== null && n > 0) omitted.push({ what, count: n, hint: hint || null, items: [], listed: [] });
    }
  } else if (Array.isArray(r.omitted)) {
    for (const item of r.omitted) {
      if (isRecord(item)) {
        const what = asString(item.what) ?? asString(item.kind) ?? 'items';
        const listed = Array.isArray(item.candidates) ? item.candidates : Array.isArray(item[what]) ? item[what] : item.items;
        omitted.push({
          what,
          count: asNumber(item.count),
          hint: asString(item.hint),
          items: asNameList(listed),
          listed: readListed(listed),
        });
      } else {
        const s = asString(item);
        if (s !== null) omitted.push({ what: s, count: null, hint: null, items: [], listed: [] });
      }
    }
  }
  let provenance: Envelope['provenance'] = null;
  if (isRecord(r.provenance)) {
    provenance = { legs: readLegs(r.provenance.legs), freshness: r.provenance.freshness ?? null };
  }
  return {
    tokens: asNumber(r.tokens) ?? asNumber(r._est_tokens) ?? asNumber(r.estTokens),
    maxTokens: asNumber(r.maxTokens),
    rawTokens: asNumber(r.rawTokens),
    truncated: r.truncated === true,
    omitted,
    resultBytes: asNumber(r.resultBytes) ?? asNumber(r._result_bytes),
    provenance,
  };
}

/** True when a value looks like a symbol card (it names a symbol). */
export function looksLikeCard(value: unknown): boolean {
  if (!isRecord(value)) return false;
  return (
    typeof value.qualifiedName === 'string' ||
    (typeof value.name === 'string' && (typeof value.kind === 'string' || typeof value.signature === 'string'))
  );
}

function readLine(value: unknown): number | null {
  return asNumber(value);
}

/**
 * An edge's or call site's confidence when the server leaves it out: the usual one of its
 * resolution (docs/PROTOCOL.md "Answers are compact").
 */
export const DEFAULT_CONFIDENCE: Readonly<Record<string, number>> = {
  local: 1.0,
  import: 0.95,
  module: 0.95,
  self: 0.95,
  super: 0.9,
  inferred: 0.85,
  external: 0.0,
  unresolved: 0.0,
};

export function confidenceOf(resolution: string | null, confidence: number | null): number | null {
  if (confidence !== null) return confidence;
  return resolution !== null && Object.hasOwn(DEFAULT_CONFIDENCE, resolution) ? (DEFAULT_CONFIDENCE[resolution] ?? null) : null;
}

/**
 * The resolution of a call site the server gives without one: bound through an import, the
 * usual case (docs/PROTOCOL.md "Answers are compact").
 */
export const DEFAULT_RESOLUTION = 'import';

/** A symbol reference; `callSite`: an entry of a card's callers/callees, whose absent resolution is DEFAULT_RESOLUTION. */
export function readRef(value: unknown, callSite = false): SymbolRef | null {
  if (typeof value === 'string') return value ? { label: value, selector: value, path: null, line: null, detail: null } : null;
  if (!isRecord(value)) return null;
  const qn = asString(value.qualifiedName) ?? asString(value.qualified_name);
  const name = asString(value.name);
  const label = qn ?? name ?? asString(value.label) ?? asString(value.id);
  if (label === null) return null;
  const line = readLine(value.line) ?? readRange(value.range).start;
  const resolution = asString(value.resolution) ?? (callSite && value.line !== undefined ? DEFAULT_RESOLUTION : null);
  const confidence = confidenceOf(resolution, asNumber(value.confidence));
  const unresolved = value.unresolved === true || resolution === 'unresolved';
  const detail = unresolved ? 'unresolved' : resolution !== null && NOTABLE_RESOLUTIONS.has(resolution) ? resolution : null;
  const tip = [resolution !== null ? `resolution ${resolution}` : null, confidence !== null ? `confidence ${confidence}` : null].filter((b): b is string => b !== null);
  const ref: SymbolRef = { label, selector: qn ?? name, path: asString(value.path), line, detail };
  if (tip.length > 0) ref.tooltip = tip.join(', ');
  return ref;
}

function readRefs(value: unknown, callSite = false): SymbolRef[] {
  if (!Array.isArray(value)) return [];
  const out: SymbolRef[] = [];
  for (const item of value) {
    const ref = readRef(item, callSite);
    if (ref) out.push(ref);
  }
  return out;
}

/** A line range given as {startLine, endLine} or as [start, end]. */
export function readRange(value: unknown): { start: number | null; end: number | null } {
  if (Array.isArray(value)) return { start: asNumber(value[0]), end: asNumber(value[1]) };
  if (isRecord(value)) return { start: asNumber(value.startLine) ?? asNumber(value.start), end: asNumber(value.endLine) ?? asNumber(value.end) };
  return { start: null, end: null };
}

export function readCard(value: unknown): Card | null {
  if (!isRecord(value)) return null;
  const range = readRange(value.range);
  const counts: Record<string, number> = {};
  if (isRecord(value.counts)) {
    for (const [k, v] of Object.entries(value.counts)) {
      const n = asNumber(v);
      if (n !== null) counts[k] = n;
    }
  }
  let annotations = asStringList(value.annotations);
  if (annotations.length === 0 && isRecord(value.annotations)) {
    annotations = Object.entries(value.annotations).map(([k, v]) => `${k}: ${asString(v) ?? JSON.stringify(v)}`);
  }
  const path = asString(value.path);
  return {
    qualifiedName: asString(value.qualifiedName),
    name: asString(value.name),
    kind: asString(value.kind),
    signature: asString(value.signature),
    path,
    startLine: range.start ?? asNumber(value.startLine) ?? asNumber(value.line),
    endLine: range.end ?? asNumber(value.endLine),
    summary: asString(value.summary),
    annotations,
    counts,
    callers: readRefs(value.callers, true),
    // a callee's call is written in the card's own file: the server gives its line only
    callees: readRefs(value.callees, true).map((r) => (r.path === null && r.line !== null && path !== null ? { ...r, path } : r)),
    tests: readRefs(value.tests),
    foundBy: asStringList(value.legs ?? value.foundBy),
  };
}

/** One call of a call graph, written out in full. */
export interface CallEdge {
  from: string;
  to: string;
  path: string | null;
  line: number | null;
  resolution: string | null;
  confidence: number | null;
}

/**
 * The calls of one direction of a callGraph answer, written out from the nodes' call `sites`
 * (docs/PROTOCOL.md): a site sits on its far end (the caller among callers, the callee among
 * callees), names its near end (`to` / `from`) only when that is not the root, and its `path`
 * only when the call is not written in its caller's file. An older answer's `edges` list is
 * read as it is.
 */
export function callGraphEdges(answer: unknown, direction: 'callers' | 'callees'): CallEdge[] {
  if (!isRecord(answer)) return [];
  const section = answer[direction];
  if (!isRecord(section)) return [];
  const edge = (from: string, to: string, v: Record<string, unknown>, path: string | null, sited = false): CallEdge => {
    const resolution = asString(v.resolution) ?? (sited ? DEFAULT_RESOLUTION : null);
    return { from, to, path, line: asNumber(v.line), resolution, confidence: confidenceOf(resolution, asNumber(v.confidence)) };
  };
  if (Array.isArray(section.edges)) {
    return section.edges
      .filter(isRecord)
      .map((e) => edge(asString(e.from) ?? '?', asString(e.to) ?? '?', e, asString(e.path)));
  }
  if (!Array.isArray(section.nodes)) return [];
  const root = isRecord(answer.root) ? answer.root : {};
  const rootName = asString(root.qualifiedName) ?? '?';
  const files = new Map<string, string>();
  const rootPath = asString(root.path);
  if (rootPath !== null) files.set(rootName, rootPath);
  const nodes = section.nodes.filter(isRecord);
  for (const n of nodes) {
    const q = asString(n.qualifiedName);
    const p = asString(n.path);
    if (q !== null && p !== null && !files.has(q)) files.set(q, p);
  }
  const out: CallEdge[] = [];
  for (const n of nodes) {
    const q = asString(n.qualifiedName);
    if (q === null || !Array.isArray(n.sites)) continue;
    for (const site of n.sites.filter(isRecord)) {
      const near = asString(direction === 'callers' ? site.to : site.from) ?? rootName;
      const from = direction === 'callers' ? q : near;
      const to = direction === 'callers' ? near : q;
      out.push(edge(from, to, site, asString(site.path) ?? files.get(from) ?? null, true));
    }
  }
  return out;
}

/** A fact of session memory, as recall and list answer it. */
export interface Fact {
  subject: string;
  predicate: string;
  object: string;
  /** The server leaves a confidence of 1.0 out (docs/PROTOCOL.md "Memory answers"). */
  confidence: number | null;
}

export function looksLikeFact(value: unknown): boolean {
  return isRecord(value) && typeof value.subject !== 'undefined' && typeof value.predicate === 'string';
}

export function readFact(value: unknown): Fact | null {
  if (!isRecord(value) || !looksLikeFact(value)) return null;
  const name = (v: unknown): string => asString(v) ?? (isRecord(v) ? (asString(v.name) ?? asString(v.id) ?? '?') : '?');
  return {
    subject: name(value.subject),
    predicate: asString(value.predicate) ?? '?',
    object: name(value.object),
    confidence: value.confidence === undefined ? 1 : asNumber(value.confidence),
  };
}

/** The results of a `search` answer, as candidates to show. */
export function readSearchResults(value: unknown): ListedSymbol[] {
  if (!isRecord(value) || !Array.isArray(value.results)) return [];
  return readListed(value.results);
}

/** Symbols as an answer lists them: names, or objects with `qualifiedName` (or `name`), `kind`, `path`, `range` or `line`. */
function readListed(value: unknown): ListedSymbol[] {
  if (!Array.isArray(value)) return [];
  const out: ListedSymbol[] = [];
  for (const r of value) {
    const name = asString(r);
    if (name) {
      out.push({ selector: name, kind: null, path: null, line: null, summary: null });
      continue;
    }
    if (!isRecord(r)) continue;
    const selector = asString(r.qualifiedName) ?? asString(r.name);
    if (!selector) continue;
    out.push({ selector, kind: asString(r.kind), path: asString(r.path), line: readRange(r.range).start ?? asNumber(r.line), summary: asString(r.summary) });
  }
  return out;
}

/** Clamp a budget to what the server accepts. */
export function clampTokens(n: number): number {
  if (!Number.isFinite(n)) return MAX_TOKENS;
  return Math.min(MAX_TOKENS, Math.max(MIN_TOKENS, Math.round(n)));
}
