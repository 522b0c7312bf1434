import { describe, expect, it } from 'vitest';
import { readSettings } from '../../src/config';
import { answerFigures } from '../../src/lmTools';
import { readIndexStatus } from '../../src/protocol';
import {
  answerFiguresText,
  effectsTree,
  readLastAnswer,
  readSavings,
  renderSavings,
  savingsLines,
} from '../../src/savings';
import { formatIndexStatus } from '../../src/statusBar';

/** A codesynapse/ledger answer as the server writes it (docs/PROTOCOL.md). */
const LEDGER = {
  session: {
    answers: 3, errors: 1, tokens: 1250, cacheHitTokens: 210, rawA: 40_000, rawB: 9000, avoidedA: 38_750,
    avoidedB: 7750, reductionPctA: 96.88, reductionPctB: 86.11, pending: 1, unestimated: 0, startedAt: 1.5,
  },
  methods: {},
  last: [
    { method: 'codesynapse/symbolCard', tokens: 480, cacheHitTokens: 210, at: 2.0, rawA: 12_001, rawB: 3400, filesA: 3, filesB: 1, avoidedA: 11_521, avoidedB: 2920 },
    { method: 'codesynapse/search', tokens: 300, cacheHitTokens: 0, at: 1.9, raw: 'pending' },
  ],
  estimator: 'bytes/4 (ceil)',
  tokens: 200,
  resultBytes: 800,
};

describe('session savings', () => {
  it('reads the session figures and says them in the tooltip', () => {
    const s = readSavings(LEDGER)!;
    expect(s).toEqual({ answers: 3, tokens: 1250, rawA: 40_000, rawB: 9000, avoidedA: 38_750, avoidedB: 7750,
      reductionPctA: 96.88, reductionPctB: 86.11, cacheHitTokens: 210, pending: 1 });
    expect(savingsLines(s)).toEqual([
      'Session savings (3 answers):',
      '  returned 1,250 tokens',
      '  avoided vs (a) files behind the answers: 38,750 (96.9% of 40,000)',
      '  avoided vs (b) grep + files opened: 7,750 (86.1% of 9,000)',
      '  cache-hit (repeats of earlier answers): 210 tokens',
      '  raw estimates pending for 1 answer',
    ]);
  });

  it('is not read from an answer that is not a ledger', () => {
    expect(readSavings({ files: 3 })).toBeNull();
    expect(readSavings({ session: { answers: 'x' } })).toBeNull();
    expect(readSavings(null)).toBeNull();
  });

  it('shows "n/a" for a reduction without a raw estimate', () => {
    const s = readSavings({ session: { ...LEDGER.session, rawA: 0, reductionPctA: null, pending: 0 } })!;
    expect(savingsLines(s)[2]).toBe('  avoided vs (a) files behind the answers: 38,750 (n/a of 0)');
  });

  it('adds the savings to the status bar tooltip', () => {
    const status = readIndexStatus({
      files: 6, symbols: 30, edges: 20, languages: { python: 5 }, indexedCommit: '', dirty: false, openBuffers: [],
      pending: 0, lastUpdate: '', state: 'ready', policyFingerprint: '',
    })!;
    const view = formatIndexStatus(status, [], new Date(), null, readSavings(LEDGER));
    const lines = view.tooltip.split('\n');
    expect(lines.slice(-9)).toEqual([
      '',
      'Session savings (3 answers):',
      '  returned 1,250 tokens',
      '  avoided vs (a) files behind the answers: 38,750 (96.9% of 40,000)',
      '  avoided vs (b) grep + files opened: 7,750 (86.1% of 9,000)',
      '  cache-hit (repeats of earlier answers): 210 tokens',
      '  raw estimates pending for 1 answer',
      '',
      'Click for details.',
    ]);
    expect(formatIndexStatus(status, [], new Date()).tooltip).not.toContain('Session savings');
  });

  it('renders the panel strip with its figures, escaped', () => {
    const html = renderSavings(readSavings(LEDGER));
    expect(html).toContain('data-tokens="1250" data-avoided-a="38750" data-avoided-b="7750" data-cache-hit="210" data-answers="3"');
    expect(html).toContain('<span class="savings-label">avoided (b)</span> <span class="savings-value">7,750</span>');
    expect(html).not.toMatch(/<script/);
    expect(renderSavings(null)).toBe('');
  });
});

describe('per-answer figures of the agent tools', () => {
  it('reads the newest row of the ledger when it is the tool\'s answer', () => {
    const f = readLastAnswer(LEDGER, 'codesynapse/symbolCard')!;
    expect(answerFiguresText(f)).toBe(
      'CodeSynapse ledger: this answer is 480 tokens; raw context for the same answer: (a) files behind it 12,001 tokens, ' +
        '(b) grep + files opened 3,400 tokens; 210 tokens repeat earlier answers of this session (cache-hit).',
    );
    expect(readLastAnswer(LEDGER, 'codesynapse/search')).toBeNull(); // another answer came last
  });

  it('says so when the raw estimate is pending', () => {
    const f = readLastAnswer({ last: [LEDGER.last[1]] }, 'codesynapse/search')!;
    expect(answerFiguresText(f)).toBe(
      'CodeSynapse ledger: this answer is 300 tokens; raw-context estimate pending; 0 tokens repeat earlier answers of this session (cache-hit).',
    );
  });

  it('asks the ledger for the last answer, and gives nothing when the server cannot say', async () => {
    const asked: unknown[] = [];
    const ok = { request: (method: string, params: unknown) => (asked.push([method, params]), Promise.resolve(LEDGER)) };
    expect(await answerFigures(ok as never, 'codesynapse/symbolCard')).toMatch(/^CodeSynapse ledger: this answer is 480 tokens/);
    expect(asked).toEqual([['codesynapse/ledger', { last: 1 }]]);
    const old = { request: () => Promise.reject(new Error('unknown method codesynapse/ledger')) };
    expect(await answerFigures(old as never, 'codesynapse/symbolCard')).toBeNull();
  });
});

describe('policy effects tree', () => {
  const EFFECTS = {
    fingerprint: 'a'.repeat(64),
    exclusions: [
      { rule: 'tests/', source: 'policy', files: 1, lines: 16, bytes: 287, estTokens: 72 },
      { rule: 'node_modules/', source: 'default', files: 2, lines: 4, bytes: 7, estTokens: 2 },
    ],
    annotations: [{ annotation: { path: 'shop/cart.py' }, cards: 8, files: 1 }],
    redactions: [{ rule: 'TOKEN_[0-9]{4}', values: 3, files: 1 }],
    previous: { fingerprint: 'b'.repeat(64), measuredAt: '2026-12-01T17:50:07Z' },
    delta: {
      exclusions: [{ rule: 'policy:shop/payment.py', change: 'added', files: 1, lines: 23, bytes: 511, estTokens: 128 }],
      annotations: [],
      redactions: [{ rule: 'PRICE_[0-9]+', change: 'removed', values: -2, files: -1 }],
    },
  };

  it('lists each rule with its own figures, and the change from the previous policy', () => {
    const nodes = effectsTree(EFFECTS);
    expect(nodes.map((n) => [n.label, n.description])).toEqual([
      ['Policy', 'aaaaaaaaaaaaaaaa'],
      ['Exclusions', '2 rules'],
      ['Annotations', '1 annotation'],
      ['Redactions', '1 rule'],
      ['Since the previous policy', 'bbbbbbbbbbbbbbbb'],
    ]);
    expect(nodes[1]!.children!.map((n) => [n.label, n.description])).toEqual([
      ['tests/', '1 file · 16 lines · ~72 tokens'],
      ['node_modules/', '2 files · 4 lines · ~2 tokens'],
    ]);
    expect(nodes[2]!.children![0]).toMatchObject({ label: 'path shop/cart.py', description: '8 cards in 1 file' });
    expect(nodes[3]!.children![0]).toMatchObject({ label: 'TOKEN_[0-9]{4}', description: '3 values removed in 1 file' });
    expect(nodes[4]!.children!.map((n) => [n.label, n.description])).toEqual([
      ['exclusions: policy:shop/payment.py', 'added · files +1, lines +23, bytes +511, estTokens +128'],
      ['redactions: PRICE_[0-9]+', 'removed · values -2, files -1'],
    ]);
  });

  it('has no "since" node without a previous policy, and one node when there is no answer', () => {
    const first = { ...EFFECTS, previous: undefined, delta: undefined };
    expect(effectsTree(first).map((n) => n.label)).toEqual(['Policy', 'Exclusions', 'Annotations', 'Redactions']);
    expect(effectsTree(undefined)).toEqual([{ label: 'No policy effects (the server gave no answer)' }]);
  });
});

describe('metrics.port setting', () => {
  const cfg = (values: Record<string, unknown>) => ({ get: <T>(key: string): T | undefined => values[key] as T | undefined });

  it('is passed to the server as metricsPort; 0 is off', () => {
    expect(readSettings(cfg({ 'metrics.port': 9464 })).settings.initializationOptions).toEqual({ metricsPort: 9464 });
    expect(readSettings(cfg({ 'metrics.port': 0 })).settings.initializationOptions).toEqual({});
    // an explicit initializationOptions.metricsPort wins
    expect(readSettings(cfg({ 'metrics.port': 9464, initializationOptions: { metricsPort: 9999 } })).settings.initializationOptions)
      .toEqual({ metricsPort: 9999 });
  });

  it('warns about an invalid port and leaves metrics off', () => {
    const r = readSettings(cfg({ 'metrics.port': 70_000 }));
    expect(r.settings.initializationOptions).toEqual({});
    expect(r.warnings).toEqual([{ key: 'codesynapse.metrics.port', message: 'must be 0 (off) or a port from 1 to 65535; metrics stay off' }]);
  });
});
