/**
 * HTML for the CodeSynapse panel, built from whatever the server answered.
 *
 * Pure functions (no `vscode` import) so they are unit-tested directly. Every value from the
 * server is escaped; unknown fields are shown generically instead of breaking the view.
 */
import {
  DEFAULT_RESOLUTION,
  ENVELOPE_KEYS,
  asString,
  budgetCanHelp,
  callGraphEdges,
  isRecord,
  looksLikeCard,
  looksLikeFact,
  readCard,
  readEnvelope,
  readFact,
  readRange,
  readRef,
  type Card,
  type Envelope,
  type SymbolRef,
} from '../protocol';
import type { RawCost } from '../rawCost';

export function escapeHtml(value: string): string {
  return value
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

const fmt = (n: number): string => n.toLocaleString('en-US');

export interface Meter {
  tokens: number | null;
  budget: number;
  raw: number | null;
  /** Who measured `raw`: the server (`rawTokens`) or this editor from the files the answer names. */
  rawSource: 'server' | 'editor' | null;
  rawFiles: number | null;
  /** Percent saved against reading the raw files, one decimal; null when not applicable. */
  savedPercent: number | null;
  /** Percent of the budget used, whole number; null when tokens are unknown. */
  usedPercent: number | null;
}

/** The meter figures: returned tokens, the budget in force, and the raw-file cost. */
export function meterFigures(env: Envelope, requestedBudget: number, estimate: RawCost | null = null): Meter {
  const budget = env.maxTokens ?? requestedBudget;
  const tokens = env.tokens;
  const rawSource = env.rawTokens !== null ? 'server' : estimate ? 'editor' : null;
  const raw = env.rawTokens ?? estimate?.tokens ?? null;
  const rawFiles = env.rawTokens === null && estimate ? estimate.files : null;
  const savedPercent =
    tokens !== null && raw !== null && raw > 0 ? Math.round(((raw - tokens) / raw) * 1000) / 10 : null;
  const usedPercent = tokens !== null && budget > 0 ? Math.round((tokens / budget) * 100) : null;
  return { tokens, budget, raw, rawSource, rawFiles, savedPercent, usedPercent };
}

function bar(kind: string, label: string, value: number | null, scale: number): string {
  const fraction = value !== null && scale > 0 ? Math.min(1, value / scale) : 0;
  return (
    `<div class="meter-row meter-${kind}">` +
    `<span class="meter-label">${label}</span>` +
    `<span class="bar"><span class="fill" data-fraction="${fraction.toFixed(4)}"></span></span>` +
    `<span class="meter-value">${value === null ? '—' : fmt(value)}</span>` +
    `</div>`
  );
}

export function renderMeter(env: Envelope, requestedBudget: number, estimate: RawCost | null = null): string {
  const m = meterFigures(env, requestedBudget, estimate);
  const scale = Math.max(m.tokens ?? 0, m.budget, m.raw ?? 0);
  const summary: string[] = [];
  if (m.tokens !== null) summary.push(`${fmt(m.tokens)} of ${fmt(m.budget)} tokens (${m.usedPercent}% of budget)`);
  else summary.push(`budget ${fmt(m.budget)} tokens; the answer did not report its size`);
  if (m.raw !== null && m.raw > 0) {
    summary.push(
      m.rawSource === 'editor'
        ? `raw files ≈ ${fmt(m.raw)} tokens (${m.rawFiles} file${m.rawFiles === 1 ? '' : 's'})`
        : `raw files ${fmt(m.raw)} tokens`,
    );
    if (m.savedPercent !== null) {
      // an answer larger than the files it names saves nothing: say so, not "-0.6% saved"
      summary.push(m.savedPercent > 0 ? `${m.savedPercent}% saved` : m.savedPercent === 0 ? 'no saving' : `no saving (${-m.savedPercent}% more than the raw files)`);
    }
  } else {
    summary.push('raw file cost not reported');
  }
  return (
    `<section class="meter" aria-label="Token meter" data-tokens="${m.tokens ?? ''}" data-budget="${m.budget}" data-raw="${m.raw ?? ''}" data-raw-source="${m.rawSource ?? ''}">` +
    bar('returned', 'Returned', m.tokens, scale) +
    bar('budget', 'Budget', m.budget, scale) +
    bar('raw', m.rawSource === 'editor' ? 'Raw files ≈' : 'Raw files', m.raw, scale) +
    `<p class="meter-summary">${escapeHtml(summary.join(' · '))}</p>` +
    `</section>`
  );
}

function locationLabel(path: string, start: number | null, end: number | null): string {
  if (start === null) return path;
  if (end === null || end === start) return `${path}:${start}`;
  return `${path}:${start}–${end}`;
}

function renderRef(ref: SymbolRef): string {
  const name = ref.selector
    ? `<button class="link symbol" data-action="card" data-selector="${escapeHtml(ref.selector)}" title="${escapeHtml(ref.label)}">${escapeHtml(ref.label)}</button>`
    : `<span class="symbol" title="${escapeHtml(ref.label)}">${escapeHtml(ref.label)}</span>`;
  const where =
    ref.path !== null
      ? ` <button class="link location" data-action="open" data-path="${escapeHtml(ref.path)}" data-line="${ref.line ?? ''}">${escapeHtml(locationLabel(ref.path, ref.line, null))}</button>`
      : '';
  const detail = ref.detail ? ` <span class="detail">${escapeHtml(ref.detail)}</span>` : '';
  return `<li class="ref"${ref.tooltip ? ` title="${escapeHtml(ref.tooltip)}"` : ''}>${name}${where}${detail}</li>`;
}

function renderRefList(title: string, cls: string, refs: SymbolRef[], total: number | undefined): string {
  const shown = refs.length;
  const count = total !== undefined && total > shown ? `${shown} of ${fmt(total)}` : `${shown}`;
  if (shown === 0 && !total) return '';
  if (shown === 0) return `<p class="refs ${cls} none">${escapeHtml(title)}: none of ${fmt(total ?? 0)} shown</p>`;
  return (
    `<details class="refs ${cls}" open><summary>${escapeHtml(title)} (${count})</summary>` +
    `<ul>${refs.map(renderRef).join('')}</ul></details>`
  );
}

export function renderCard(card: Card): string {
  const title = card.qualifiedName ?? card.name ?? '(unnamed symbol)';
  const selector = card.qualifiedName ?? card.name;
  const head =
    `<header>` +
    (card.kind ? `<span class="kind">${escapeHtml(card.kind)}</span> ` : '') +
    (selector
      ? `<button class="link symbol title" data-action="card" data-selector="${escapeHtml(selector)}" title="${escapeHtml(title)}">${escapeHtml(title)}</button>`
      : `<span class="symbol title" title="${escapeHtml(title)}">${escapeHtml(title)}</span>`) +
    `</header>`;
  const sig = card.signature ? `<pre class="signature">${escapeHtml(card.signature)}</pre>` : '';
  const loc = card.path
    ? `<button class="link location" data-action="open" data-path="${escapeHtml(card.path)}" data-line="${card.startLine ?? ''}">${escapeHtml(locationLabel(card.path, card.startLine, card.endLine))}</button>`
    : '';
  const summary = card.summary ? `<p class="summary">${escapeHtml(card.summary)}</p>` : '';
  const annotations =
    card.annotations.length > 0
      ? `<ul class="annotations">${card.annotations.map((a) => `<li>${escapeHtml(a)}</li>`).join('')}</ul>`
      : '';
  const countEntries = Object.entries(card.counts);
  const counts =
    countEntries.length > 0
      ? `<p class="counts">${countEntries
          .map(([k, v]) => `<span class="count" data-count="${escapeHtml(k)}">${fmt(v)} ${escapeHtml(countLabel(k, v))}</span>`)
          .join(' · ')}</p>`
      : '';
  const callers = renderRefList('Callers', 'callers', card.callers, card.counts.callers);
  const callees = renderRefList('Callees', 'callees', card.callees, card.counts.callees);
  const tests = renderRefList('Tests', 'tests', card.tests, card.counts.tests);
  return (
    `<article class="card" data-qualified-name="${escapeHtml(title)}"${card.foundBy.length > 0 ? ` title="found by ${escapeHtml(card.foundBy.join(', '))}"` : ''}>` +
    head +
    sig +
    loc +
    summary +
    annotations +
    counts +
    callers +
    callees +
    tests +
    `</article>`
  );
}

/** "callers" → "callers"/"caller", "unresolvedCallers" → "unresolved callers". */
function countLabel(key: string, n: number): string {
  const words = humanize(key).toLowerCase();
  return n === 1 && words.endsWith('s') ? words.slice(0, -1) : words;
}

function humanize(key: string): string {
  const words = key
    .replace(/_/g, ' ')
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function renderScalar(value: unknown): string {
  if (value === null || value === undefined) return '<span class="muted">—</span>';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  const s = asString(value);
  if (s !== null) return escapeHtml(typeof value === 'number' ? fmt(value) : s);
  return `<code>${escapeHtml(truncateText(JSON.stringify(value), 400))}</code>`;
}

function truncateText(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function renderFacts(items: unknown[]): string {
  const lines = items
    .map(readFact)
    .filter((f) => f !== null)
    .map(
      (f) =>
        `<li class="fact"><span class="subject">${escapeHtml(f.subject)}</span> <span class="predicate">${escapeHtml(f.predicate)}</span> <span class="object">${escapeHtml(f.object)}</span>` +
        // a full confidence (1.0, the default the server leaves out) is not worth a word
        (f.confidence !== null && f.confidence !== 1 ? ` <span class="detail">(${f.confidence})</span>` : '') +
        `</li>`,
    );
  return `<ul class="facts">${lines.join('')}</ul>`;
}

/** List keys whose plain string items are symbol names (rendered as links to their cards). */
const SYMBOL_LIST_KEYS = new Set([
  'callers',
  'callees',
  'tests',
  'implementations',
  'symbols',
  'changed',
  'impacted',
  'affected',
  'related',
  'nodes',
  'results',
  'matches',
]);

function looksLikeEdge(value: unknown): boolean {
  return isRecord(value) && typeof value.from === 'string' && typeof value.to === 'string';
}

function renderEdges(items: unknown[]): string {
  const rows = items.filter(isRecord).map((e) => {
    const from = asString(e.from) ?? '?';
    const to = asString(e.to) ?? '?';
    const ref = readRef({ qualifiedName: to, path: e.path, line: e.line, resolution: e.resolution, confidence: e.confidence });
    const where =
      ref?.path != null
        ? ` <button class="link location" data-action="open" data-path="${escapeHtml(ref.path)}" data-line="${ref.line ?? ''}">${escapeHtml(locationLabel(ref.path, ref.line, null))}</button>`
        : '';
    const detail = ref?.detail ? ` <span class="detail">${escapeHtml(ref.detail)}</span>` : '';
    return (
      `<li class="edge"><button class="link symbol" data-action="card" data-selector="${escapeHtml(from)}">${escapeHtml(from)}</button> → ` +
      `<button class="link symbol" data-action="card" data-selector="${escapeHtml(to)}">${escapeHtml(to)}</button>${where}${detail}</li>`
    );
  });
  return `<ul class="edges">${rows.join('')}</ul>`;
}

/** Render any value: cards as cards, facts as facts, names as links, the rest as fields. */
export function renderValue(value: unknown, depth = 0, key = ''): string {
  if (isRecord(value) && looksLikeCard(value)) {
    const card = readCard(value);
    if (card) return renderCard(card) + renderExtraFields(value, CARD_KEYS, depth);
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return '<p class="muted">none</p>';
    if (value.every(looksLikeCard)) return value.map((v) => renderValue(v, depth + 1)).join('');
    if (value.every(looksLikeFact)) return renderFacts(value);
    if (value.every(looksLikeEdge)) return renderEdges(value);
    if (value.every((v) => typeof v === 'string' || typeof v === 'number') && !SYMBOL_LIST_KEYS.has(key)) {
      return `<p class="list">${escapeHtml(value.map(String).join(', '))}</p>`;
    }
    // callers/callees lists are call sites: an absent resolution is the usual "import"
    const refs = value.map((v) => readRef(v, key === 'callers' || key === 'callees'));
    if (refs.every((r) => r !== null) && value.every((v) => typeof v === 'string' || (isRecord(v) && Object.keys(v).length <= 6))) {
      return `<ul class="refs-plain">${(refs).map(renderRef).join('')}</ul>`;
    }
    return `<ul class="items">${value.map((v) => `<li>${depth >= 3 ? renderScalar(v) : renderValue(v, depth + 1)}</li>`).join('')}</ul>`;
  }
  if (isRecord(value)) {
    if (depth >= 3) return renderScalar(value);
    return renderFields(value, new Set(), depth + 1);
  }
  return renderScalar(value);
}

const CARD_KEYS = new Set([
  'qualifiedName',
  'name',
  'kind',
  'signature',
  'path',
  'range',
  'startLine',
  'endLine',
  'line',
  'summary',
  'annotations',
  'counts',
  'callers',
  'callees',
  'tests',
  'id',
]);

function renderExtraFields(value: Record<string, unknown>, skip: ReadonlySet<string>, depth: number): string {
  const rest = Object.keys(value).filter((k) => !skip.has(k) && !ENVELOPE_KEYS.has(k));
  if (rest.length === 0 || depth >= 3) return '';
  return renderFields(value, new Set([...skip, ...ENVELOPE_KEYS]), depth + 1);
}

/**
 * Fields that tell how an answer was made (retrieval legs, scores, sizes, ids, fingerprints),
 * not what it says: they go under the answer's "Details" disclosure instead of in the body.
 */
export const DIAGNOSTIC_KEYS: ReadonlySet<string> = new Set([
  'legs',
  'foundBy',
  'score',
  'match',
  'confidence',
  'resultBytes',
  'policyFingerprint',
  'fingerprint',
  'id',
  'embedded',
  'embeddingPending',
  'embeddingNote',
  'hop',
  'nextCursor',
  'publicCallers',
]);

function renderFields(value: Record<string, unknown>, skip: ReadonlySet<string>, depth: number, diagnostics = false): string {
  const scalars: string[] = [];
  const blocks: string[] = [];
  for (const [key, v] of Object.entries(value)) {
    if (skip.has(key) || (!diagnostics && DIAGNOSTIC_KEYS.has(key))) continue;
    if (v === null || v === undefined || typeof v !== 'object') {
      scalars.push(`<dt>${escapeHtml(humanize(key))}</dt><dd>${renderScalar(v)}</dd>`);
    } else {
      const count = Array.isArray(v) ? ` <span class="muted">(${v.length})</span>` : '';
      blocks.push(
        `<section class="field" data-key="${escapeHtml(key)}"><h3>${escapeHtml(humanize(key))}${count}</h3>${renderValue(v, depth, key)}</section>`,
      );
    }
  }
  return (scalars.length ? `<dl class="fields">${scalars.join('')}</dl>` : '') + blocks.join('');
}

/** A symbol the answer left out that the user can add to it (a task's weaker candidates). */
export interface Candidate {
  selector: string;
  kind: string | null;
  path: string | null;
  line: number | null;
  summary: string | null;
}

function renderCandidates(candidates: readonly Candidate[]): string {
  if (candidates.length === 0) return '';
  const rows = candidates
    .map(
      (c) =>
        `<li class="candidate">` +
        `<button class="add" data-action="add" data-selector="${escapeHtml(c.selector)}" title="Add its card to this answer" aria-label="Add ${escapeHtml(c.selector)}">+ Add</button> ` +
        (c.kind ? `<span class="kind">${escapeHtml(c.kind)}</span> ` : '') +
        `<button class="link symbol" data-action="card" data-selector="${escapeHtml(c.selector)}" title="${escapeHtml(c.selector)}">${escapeHtml(c.selector)}</button>` +
        (c.path !== null
          ? ` <button class="link location" data-action="open" data-path="${escapeHtml(c.path)}" data-line="${c.line ?? ''}">${escapeHtml(locationLabel(c.path, c.line, null))}</button>`
          : '') +
        (c.summary ? `<span class="candidate-summary detail">${escapeHtml(c.summary)}</span>` : '') +
        `</li>`,
    )
    .join('');
  return `<details class="candidates" open><summary>Omitted candidates (${candidates.length}) — add the ones you need</summary><ul>${rows}</ul></details>`;
}

export function renderOmitted(env: Envelope, more: LoadMore | null, candidates: readonly Candidate[] = []): string {
  if (env.omitted.length === 0 && !env.truncated) return '';
  const items = env.omitted
    .map(
      (o) =>
        `<li class="omission"><span class="count">${o.count === null ? '' : fmt(o.count)}</span> <span class="what">${escapeHtml(o.what)}</span>` +
        (o.hint ? ` <span class="hint">${escapeHtml(o.hint)}</span>` : '') +
        `</li>`,
    )
    .join('');
  const button = more
    ? `<button class="more" data-action="more">${escapeHtml(more.label)}</button>`
    : budgetCanHelp(env)
      ? '<p class="muted">This is the largest budget the server accepts; narrow the request to see the rest.</p>'
      : '';
  return (
    `<section class="omitted"><h3>Omitted${env.truncated ? ' <span class="badge">truncated</span>' : ''}</h3>` +
    (items ? `<ul>${items}</ul>` : '') +
    renderCandidates(candidates) +
    button +
    `</section>`
  );
}

/**
 * How the answer was made, behind a "Details" disclosure: retrieval legs, index freshness,
 * size, and the answer's diagnostic fields (see DIAGNOSTIC_KEYS).
 */
function renderDiagnostics(env: Envelope, result: unknown): string {
  const parts: string[] = [];
  if (env.provenance && env.provenance.legs.length > 0) parts.push(`found by ${env.provenance.legs.join(', ')}`);
  const fresh = env.provenance?.freshness;
  if (typeof fresh === 'string') parts.push(`index ${fresh}`);
  else if (isRecord(fresh)) {
    const state = asString(fresh.state);
    if (state) parts.push(`index ${state}`);
    const pending = typeof fresh.pending === 'number' ? fresh.pending : 0;
    if (pending > 0) parts.push(`${fmt(pending)} pending`);
    if (fresh.dirty === true) parts.push('uncommitted changes');
  }
  if (env.resultBytes !== null) parts.push(`${fmt(env.resultBytes)} bytes`);
  const fields: Record<string, unknown> = {};
  if (isRecord(result)) {
    for (const key of DIAGNOSTIC_KEYS) if (key !== 'resultBytes' && result[key] !== undefined && result[key] !== '') fields[key] = result[key];
  }
  const extra = Object.keys(fields).length > 0 ? renderFields(fields, new Set(), 0, true) : '';
  if (parts.length === 0 && !extra) return '';
  return (
    `<details class="diagnostics"><summary>Details</summary>` +
    (parts.length ? `<p class="provenance">${escapeHtml(parts.join(' · '))}</p>` : '') +
    extra +
    `</details>`
  );
}

export interface LoadMore {
  label: string;
}

export interface ResultView {
  title: string;
  subtitle?: string;
  result: unknown;
  budget: number | null;
  more: LoadMore | null;
  /** The editor's estimate of the raw-file cost, used when the server sends no `rawTokens`. */
  rawEstimate?: RawCost | null;
  /** Left-out symbols the user can add (a task's weaker candidates). */
  candidates?: readonly Candidate[];
  /** Why the answer may be out of date (a file changed after it); null/absent when current. */
  stale?: string | null;
  /** Cards the user added to the answer, with what each cost. */
  added?: readonly { card: unknown; tokens: number | null }[];
}

function renderAdded(added: readonly { card: unknown; tokens: number | null }[]): string {
  if (added.length === 0) return '';
  const tokens = added.reduce((sum, a) => sum + (a.tokens ?? 0), 0);
  return (
    `<section class="added"><h3>Added by you (${added.length}) <span class="muted">+${fmt(tokens)} tokens</span></h3>` +
    added.map((a) => renderValue(a.card)).join('') +
    `</section>`
  );
}

interface TreeNode {
  name: string;
  kind: string | null;
  path: string | null;
  line: number | null;
  /** Call sites by the near end they call (callers) or are called from (callees). */
  sites: Map<string, { line: number | null; path: string | null; resolution: string | null; confidence: number | null }[]>;
}

/**
 * One direction of a callGraph answer as a tree, the way the built-in Call Hierarchy view
 * shows it: each caller (or callee) once under the symbol it calls (or is called by), with its
 * call sites folded under it, the next level nested inside.
 */
function renderCallTree(answer: Record<string, unknown>, direction: 'callers' | 'callees'): string {
  const section = answer[direction];
  if (!isRecord(section) || !Array.isArray(section.nodes)) return '';
  const root = isRecord(answer.root) ? answer.root : {};
  const rootName = asString(root.qualifiedName) ?? '?';
  const nodes = new Map<string, TreeNode>();
  for (const n of section.nodes.filter(isRecord)) {
    const name = asString(n.qualifiedName);
    if (name === null) continue;
    const node: TreeNode = { name, kind: asString(n.kind), path: asString(n.path), line: readRange(n.range).start, sites: new Map() };
    nodes.set(name, node);
  }
  for (const e of callGraphEdges(answer, direction)) {
    const far = direction === 'callers' ? e.from : e.to;
    const near = direction === 'callers' ? e.to : e.from;
    const node = nodes.get(far);
    if (!node) continue;
    const list = node.sites.get(near) ?? [];
    list.push({ line: e.line, path: e.path, resolution: e.resolution, confidence: e.confidence });
    node.sites.set(near, list);
  }
  const children = (parent: string): TreeNode[] =>
    [...nodes.values()].filter((n) => n.sites.has(parent)).sort((a, b) => a.name.localeCompare(b.name));
  const renderNode = (node: TreeNode, parent: string, seen: ReadonlySet<string>): string => {
    const sites = node.sites.get(parent) ?? [];
    const next = seen.has(node.name) ? [] : children(node.name);
    const inner = new Set([...seen, node.name]);
    const siteRows = sites
      .map((site) => {
        const where = site.path !== null ? `${site.path}:${site.line ?? ''}` : `line ${site.line ?? '?'}`;
        const how = site.resolution && site.resolution !== DEFAULT_RESOLUTION && site.resolution !== 'local' ? ` <span class="detail">${escapeHtml(site.resolution)}</span>` : '';
        return site.path !== null
          ? `<li class="site"><button class="link location" data-action="open" data-path="${escapeHtml(site.path)}" data-line="${site.line ?? ''}" title="${escapeHtml(where)}">${escapeHtml(where)}</button>${how}</li>`
          : `<li class="site"><span class="muted">${escapeHtml(where)}</span>${how}</li>`;
      })
      .join('');
    const count = `<span class="site-count muted">${sites.length} call${sites.length === 1 ? '' : 's'}</span>`;
    const location =
      node.path !== null
        ? ` <button class="link location" data-action="open" data-path="${escapeHtml(node.path)}" data-line="${node.line ?? ''}" title="${escapeHtml(locationLabel(node.path, node.line, null))}">${escapeHtml(locationLabel(node.path, node.line, null))}</button>`
        : '';
    const summary =
      `<summary>` +
      (node.kind ? `<span class="kind">${escapeHtml(node.kind)}</span> ` : '') +
      `<button class="link symbol" data-action="card" data-selector="${escapeHtml(node.name)}" title="${escapeHtml(node.name)}">${escapeHtml(node.name)}</button> ` +
      count +
      location +
      `</summary>`;
    return (
      `<li class="tree-node" data-qualified-name="${escapeHtml(node.name)}"><details${next.length > 0 ? ' open' : ''}>${summary}` +
      `<ul class="sites">${siteRows}</ul>` +
      (next.length > 0 ? `<ul class="tree">${next.map((c) => renderNode(c, node.name, inner)).join('')}</ul>` : '') +
      `</details></li>`
    );
  };
  const top = children(rootName);
  const heading = `${direction === 'callers' ? 'Callers' : 'Callees'} (${nodes.size})`;
  const hierarchy = `<button class="link hierarchy" data-action="hierarchy" data-direction="${direction}" data-selector="${escapeHtml(rootName)}" data-path="${escapeHtml(asString(root.path) ?? '')}" data-line="${readRange(root.range).start ?? ''}">Open in Call Hierarchy</button>`;
  const body = top.length > 0 ? `<ul class="tree">${top.map((n) => renderNode(n, rootName, new Set([rootName]))).join('')}</ul>` : '<p class="muted">none</p>';
  const rest = { ...section };
  delete rest.nodes;
  delete rest.edges;
  return (
    `<section class="calltree" data-direction="${direction}"><h3>${escapeHtml(heading)} ${hierarchy}</h3>` +
    body +
    renderFields(rest, new Set(), 1) +
    `</section>`
  );
}

/** True for a recall or list answer of session memory (docs/PROTOCOL.md "Memory answers"). */
function looksLikeMemory(answer: Record<string, unknown>): boolean {
  return Array.isArray(answer.entries) && (typeof answer.notice === 'string' || 'nextCursor' in answer);
}

function renderMemory(answer: Record<string, unknown>): string {
  const entries = (answer.entries as unknown[]).filter(isRecord);
  const facts = Array.isArray(answer.facts) ? answer.facts.filter(isRecord) : [];
  const rows = entries.map((e) => {
    const name = asString(e.name) ?? '?';
    const id = asString(e.id);
    const type = asString(e.type);
    const count = typeof e.facts === 'number' ? e.facts : null;
    return (
      `<li class="memory-entry" data-name="${escapeHtml(name)}">` +
      `<span class="memory-name" title="${escapeHtml(name)}">${escapeHtml(name)}</span>` +
      (type ? ` <span class="kind">${escapeHtml(type)}</span>` : '') +
      ` <span class="badge scope">${e.durable === true ? 'durable' : 'session'}</span>` +
      (count !== null ? ` <span class="muted">${fmt(count)} fact${count === 1 ? '' : 's'}</span>` : '') +
      ` <button class="forget" data-action="forget" data-name="${escapeHtml(name)}"${id ? ` data-id="${escapeHtml(id)}"` : ''} title="Forget ${escapeHtml(name)} and its facts">Delete</button>` +
      `</li>`
    );
  });
  const factRows = facts.map((f) => {
    const subject = asString(f.subject) ?? '?';
    const object = asString(f.object) ?? '?';
    const predicate = asString(f.predicate) ?? '?';
    const conf = typeof f.confidence === 'number' ? ` <span class="detail">(${f.confidence})</span>` : '';
    return (
      `<li class="fact"><span class="subject">${escapeHtml(subject)}</span> <span class="predicate">${escapeHtml(predicate)}</span> ` +
      `<span class="object">${escapeHtml(object)}</span>${conf}</li>`
    );
  });
  const parts: string[] = [];
  if (entries.length === 0) parts.push(`<p class="muted">${escapeHtml(asString(answer.hint) ?? 'Nothing remembered matches.')}</p>`);
  else parts.push(`<section class="memory"><h3>Remembered (${entries.length})</h3><ul class="memory-entries">${rows.join('')}</ul></section>`);
  if (factRows.length > 0) parts.push(`<section class="memory-facts"><h3>Facts (${factRows.length})</h3><ul class="facts">${factRows.join('')}</ul></section>`);
  if (typeof answer.nextCursor === 'string' && answer.nextCursor) parts.push('<p class="muted">More entries: narrow the list, or page with the memory-list tool.</p>');
  if (typeof answer.notice === 'string') parts.push(`<p class="notice muted">${escapeHtml(answer.notice)}</p>`);
  return parts.join('');
}

/** Keys that only qualify the subject: shown when they say something unusual. */
function renderBody(answer: Record<string, unknown>): string {
  if (looksLikeCard(answer)) return renderValue(answer);
  if (looksLikeMemory(answer)) return renderMemory(answer);
  const parts: string[] = [];
  const skip = new Set(ENVELOPE_KEYS);
  if (answer.found === false) {
    parts.push('<p class="not-found" role="status">Not found.</p>');
  }
  skip.add('found');
  // A symbol answer's subject comes first, without a heading.
  if (isRecord(answer.card) && looksLikeCard(answer.card)) {
    parts.push(renderValue(answer.card));
    skip.add('card');
  }
  // A call graph: its root, then each direction as a tree.
  if (isRecord(answer.root) && looksLikeCard(answer.root)) {
    parts.push(renderValue(answer.root));
    skip.add('root');
    for (const direction of ['callers', 'callees'] as const) {
      if (isRecord(answer[direction])) {
        parts.push(renderCallTree(answer, direction));
        skip.add(direction);
      }
    }
  }
  parts.push(renderFields(answer, skip, 0));
  return parts.join('');
}

/** The panel body for one answer: title, token meter, content, omissions, provenance. */
export function renderResult(view: ResultView): string {
  const env = readEnvelope(view.result);
  const head =
    `<header class="result-head"><h2>${escapeHtml(view.title)}</h2>` +
    (view.subtitle ? `<p class="subtitle" title="${escapeHtml(view.subtitle)}">${escapeHtml(view.subtitle)}</p>` : '') +
    `</header>`;
  const budget = view.budget ?? env.maxTokens;
  const added = view.added ?? [];
  const addedTokens = added.reduce((sum, a) => sum + (a.tokens ?? 0), 0);
  // cards the user added count against what the answer now costs
  const metered = addedTokens > 0 && env.tokens !== null ? { ...env, tokens: env.tokens + addedTokens } : env;
  const meter = budget !== null ? renderMeter(metered, budget, view.rawEstimate ?? null) : '';
  let body: string;
  if (isRecord(view.result)) {
    body = renderBody(view.result) || '<p class="muted">The answer is empty.</p>';
  } else if (view.result === null || view.result === undefined) {
    body = '<p class="muted">No answer.</p>';
  } else {
    body = renderValue(view.result);
  }
  const staleText = view.stale ?? freshnessNote(env);
  const stale = staleText
    ? `<div class="stale" role="status"><span class="stale-text">${escapeHtml(staleText)}</span> <button class="refresh" data-action="refresh">Refresh</button></div>`
    : '';
  return (
    `<div class="result${staleText ? ' is-stale' : ''}">` +
    head +
    stale +
    meter +
    `<div class="body">${body}${renderAdded(added)}</div>` +
    renderOmitted(env, view.more, (view.candidates ?? []).filter((c) => !added.some((a) => isRecord(a.card) && a.card.qualifiedName === c.selector))) +
    renderDiagnostics(env, view.result) +
    `</div>`
  );
}

/**
 * Why an answer may not reflect the workspace, from the index freshness it carries
 * (docs/PROTOCOL.md: `state` idle | indexing | ready | failed, `pending` changes): null when
 * it is current (ready, nothing pending).
 */
export function freshnessNote(env: Envelope): string | null {
  const fresh = env.provenance?.freshness;
  const state = typeof fresh === 'string' ? fresh : isRecord(fresh) ? asString(fresh.state) : null;
  const pending = isRecord(fresh) && typeof fresh.pending === 'number' ? fresh.pending : 0;
  switch (state) {
    case 'indexing':
      return 'The index is still being built: this answer may miss files not indexed yet.';
    case 'idle':
      return 'The server has not indexed the folder yet: this answer comes from an older index, or none.';
    case 'failed':
      return 'The last index of the folder failed: this answer comes from the index before it (see the log).';
  }
  if (pending > 0) return `${fmt(pending)} change${pending === 1 ? ' is' : 's are'} not indexed yet: this answer may not reflect ${pending === 1 ? 'it' : 'them'}.`;
  return null;
}

export function renderError(title: string, message: string): string {
  return (
    `<div class="result error-result"><header class="result-head"><h2>${escapeHtml(title)}</h2></header>` +
    `<p class="error" role="alert">${escapeHtml(message)}</p></div>`
  );
}

export function renderBusy(title: string): string {
  return `<div class="result busy"><header class="result-head"><h2>${escapeHtml(title)}</h2></header><p class="muted">Asking the server…</p></div>`;
}

/** A button that runs one of the extension's commands (the panel allows only WELCOME_COMMANDS). */
function commandButton(command: string, label: string, key?: string): string {
  return (
    `<button class="command" data-action="command" data-command="${escapeHtml(command)}">${escapeHtml(label)}</button>` +
    (key ? ` <kbd>${escapeHtml(key)}</kbd>` : '')
  );
}

/** Commands the welcome text links to; the panel runs no other command from a click. */
export const WELCOME_COMMANDS: ReadonlySet<string> = new Set([
  'codesynapse.showSymbolCard',
  'codesynapse.showCallers',
  'codesynapse.showCallees',
  'codesynapse.contextForDiff',
  'codesynapse.showIndexStatus',
  'codesynapse.selectInterpreter',
  'codesynapse.openWalkthrough',
]);

export function renderWelcome(): string {
  return (
    `<div class="welcome">` +
    `<p>Put the cursor on a symbol, then:</p>` +
    `<ul class="welcome-actions">` +
    `<li>${commandButton('codesynapse.showSymbolCard', 'Show Symbol Card', 'Ctrl+Alt+Shift+C')}</li>` +
    `<li>${commandButton('codesynapse.showCallers', 'Show Callers', 'Ctrl+Alt+Shift+I')}</li>` +
    `<li>${commandButton('codesynapse.showCallees', 'Show Callees', 'Ctrl+Alt+Shift+O')}</li>` +
    `<li>${commandButton('codesynapse.contextForDiff', 'Context for the Current Git Diff', 'Ctrl+Alt+Shift+D')}</li>` +
    `</ul>` +
    `<p>…or type a task in the box above. Every answer shows its token cost against the budget and against reading the raw files.</p>` +
    `<p class="muted">${commandButton('codesynapse.openWalkthrough', 'Get started')} · ${commandButton('codesynapse.showIndexStatus', 'Index status')} · ${commandButton('codesynapse.selectInterpreter', 'Select interpreter')}</p>` +
    `</div>`
  );
}
