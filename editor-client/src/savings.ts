/**
 * What the session saved (`codesynapse/ledger`) and what the policy does
 * (`codesynapse/policyEffects`), read from the server's answers and said for the status bar
 * tooltip, the panel, the agent tools and the Policy Effects view (docs/PROTOCOL.md).
 *
 * Baselines: (a) the files behind an answer, (b) grep output plus the files an agent would
 * open. Tokens are the server's bytes/4 estimate. Cache-hit tokens are the part of the answers
 * that repeats cards and sites this session already received. The session's figures reset
 * with the session (a restarted server is a new session).
 */
import { isRecord } from './protocol';

export interface Savings {
  answers: number;
  tokens: number;
  rawA: number;
  rawB: number;
  avoidedA: number;
  avoidedB: number;
  reductionPctA: number | null;
  reductionPctB: number | null;
  cacheHitTokens: number;
  pending: number;
}

function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/** The session's figures of a ledger answer; null when the answer is not one. */
export function readSavings(raw: unknown): Savings | null {
  if (!isRecord(raw) || !isRecord(raw.session)) return null;
  const s = raw.session;
  const keys = ['answers', 'tokens', 'rawA', 'rawB', 'avoidedA', 'avoidedB', 'cacheHitTokens', 'pending'] as const;
  const out: Partial<Savings> = {};
  for (const k of keys) {
    const v = num(s[k]);
    if (v === null) return null;
    out[k] = v;
  }
  out.reductionPctA = num(s.reductionPctA);
  out.reductionPctB = num(s.reductionPctB);
  return out as Savings;
}

const fmt = (n: number): string => n.toLocaleString('en-US');
const pct = (p: number | null): string => (p === null ? 'n/a' : `${p.toFixed(1)}%`);

/** The tooltip's lines: "Session savings" and the figures. */
export function savingsLines(s: Savings): string[] {
  const lines = [
    `Session savings (${fmt(s.answers)} answer${s.answers === 1 ? '' : 's'}):`,
    `  returned ${fmt(s.tokens)} tokens`,
    `  avoided vs (a) files behind the answers: ${fmt(s.avoidedA)} (${pct(s.reductionPctA)} of ${fmt(s.rawA)})`,
    `  avoided vs (b) grep + files opened: ${fmt(s.avoidedB)} (${pct(s.reductionPctB)} of ${fmt(s.rawB)})`,
    `  cache-hit (repeats of earlier answers): ${fmt(s.cacheHitTokens)} tokens`,
  ];
  if (s.pending > 0) lines.push(`  raw estimates pending for ${fmt(s.pending)} answer${s.pending === 1 ? '' : 's'}`);
  return lines;
}

function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);
}

/** The panel's savings strip (escaped HTML). */
export function renderSavings(s: Savings | null): string {
  if (!s) return '';
  const cells: [string, string, string][] = [
    ['returned', fmt(s.tokens), 'tokens returned in this session'],
    ['avoided (a)', fmt(s.avoidedA), `vs the files behind the answers: ${pct(s.reductionPctA)} of ${fmt(s.rawA)}`],
    ['avoided (b)', fmt(s.avoidedB), `vs grep output plus the files an agent would open: ${pct(s.reductionPctB)} of ${fmt(s.rawB)}`],
    ['cache-hit', fmt(s.cacheHitTokens), 'tokens that repeat cards and sites this session already received'],
  ];
  return (
    `<section class="savings" aria-label="Session savings" data-tokens="${s.tokens}" data-avoided-a="${s.avoidedA}" ` +
    `data-avoided-b="${s.avoidedB}" data-cache-hit="${s.cacheHitTokens}" data-answers="${s.answers}">` +
    `<span class="savings-title">Session · ${fmt(s.answers)} answer${s.answers === 1 ? '' : 's'}</span>` +
    cells
      .map(([label, value, title]) => `<span class="savings-cell" title="${esc(title)}"><span class="savings-label">${esc(label)}</span> <span class="savings-value">${esc(value)}</span></span>`)
      .join('') +
    '</section>'
  );
}

export interface AnswerFigures {
  method: string;
  tokens: number;
  rawA: number | null;
  rawB: number | null;
  cacheHitTokens: number;
}

/** The ledger's row of the newest answer, when it is an answer of `method`. */
export function readLastAnswer(raw: unknown, method: string): AnswerFigures | null {
  if (!isRecord(raw) || !Array.isArray(raw.last)) return null;
  const row: unknown = raw.last[0];
  if (!isRecord(row) || row.method !== method) return null;
  const tokens = num(row.tokens);
  const hit = num(row.cacheHitTokens);
  if (tokens === null || hit === null) return null;
  return { method, tokens, rawA: num(row.rawA), rawB: num(row.rawB), cacheHitTokens: hit };
}

/** One sentence with an answer's figures, for an agent tool's result. */
export function answerFiguresText(f: AnswerFigures): string {
  const raw =
    f.rawA !== null && f.rawB !== null
      ? `; raw context for the same answer: (a) files behind it ${fmt(f.rawA)} tokens, (b) grep + files opened ${fmt(f.rawB)} tokens`
      : '; raw-context estimate pending';
  return `CodeSynapse ledger: this answer is ${fmt(f.tokens)} tokens${raw}; ${fmt(f.cacheHitTokens)} tokens repeat earlier answers of this session (cache-hit).`;
}

// ---- Policy effects --------------------------------------------------------------------------

export interface EffectsNode {
  label: string;
  description?: string;
  tooltip?: string;
  children?: EffectsNode[];
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${fmt(n)} ${n === 1 ? one : many}`;
}

function signed(n: number): string {
  return `${n > 0 ? '+' : ''}${fmt(n)}`;
}

/** The Policy Effects view's tree for a policyEffects answer; one node saying why when there is none. */
export function effectsTree(raw: unknown): EffectsNode[] {
  if (!isRecord(raw) || typeof raw.fingerprint !== 'string') return [{ label: 'No policy effects (the server gave no answer)' }];
  const list = (k: string): Record<string, unknown>[] => (Array.isArray(raw[k]) ? (raw[k] as unknown[]).filter(isRecord) : []);
  const n = (r: Record<string, unknown>, k: string): number => num(r[k]) ?? 0;
  const exclusions = list('exclusions').map((x) => ({
    label: String(x.rule),
    description: `${plural(n(x, 'files'), 'file')} · ${plural(n(x, 'lines'), 'line')} · ~${fmt(n(x, 'estTokens'))} tokens`,
    tooltip: `${String(x.source)} rule ${String(x.rule)}: keeps ${plural(n(x, 'files'), 'file')}, ${plural(n(x, 'lines'), 'line')}, ${plural(n(x, 'bytes'), 'byte')} (~${fmt(n(x, 'estTokens'))} tokens) out of the index`,
  }));
  const annotations = list('annotations').map((a) => {
    const what = isRecord(a.annotation) ? (typeof a.annotation.path === 'string' ? `path ${a.annotation.path}` : `symbol ${String(a.annotation.symbol)}`) : '?';
    return { label: what, description: `${plural(n(a, 'cards'), 'card')} in ${plural(n(a, 'files'), 'file')}`, tooltip: `the note is on ${plural(n(a, 'cards'), 'card')}` };
  });
  const redactions = list('redactions').map((r) => ({
    label: String(r.rule),
    description: `${plural(n(r, 'values'), 'value')} removed in ${plural(n(r, 'files'), 'file')}`,
    tooltip: 'values the rule removed from what the index stores (names, signatures, summaries, call and import texts)',
  }));
  const nodes: EffectsNode[] = [
    { label: 'Policy', description: raw.fingerprint.slice(0, 16), tooltip: `fingerprint ${raw.fingerprint}` },
    { label: 'Exclusions', description: plural(exclusions.length, 'rule'), tooltip: 'files each exclusion rule keeps out of the index', children: exclusions },
    { label: 'Annotations', description: plural(annotations.length, 'annotation'), tooltip: 'cards each annotation changes', children: annotations },
    { label: 'Redactions', description: plural(redactions.length, 'rule'), tooltip: 'values each redaction rule removed', children: redactions },
  ];
  if (isRecord(raw.delta) && isRecord(raw.previous)) {
    const changes: EffectsNode[] = [];
    for (const kind of ['exclusions', 'annotations', 'redactions']) {
      const rows = Array.isArray(raw.delta[kind]) ? (raw.delta[kind] as unknown[]).filter(isRecord) : [];
      for (const r of rows) {
        const figures = Object.entries(r)
          .filter(([k, v]) => k !== 'rule' && k !== 'change' && typeof v === 'number')
          .map(([k, v]) => `${k} ${signed(v as number)}`)
          .join(', ');
        changes.push({ label: `${kind}: ${String(r.rule)}`, description: `${String(r.change)} · ${figures}` });
      }
    }
    nodes.push({
      label: 'Since the previous policy',
      description: typeof raw.previous.fingerprint === 'string' ? raw.previous.fingerprint.slice(0, 16) : '',
      tooltip: 'rule by rule, this policy minus the previous one measured in this workspace',
      children: changes.length ? changes : [{ label: 'no change' }],
    });
  }
  return nodes;
}
