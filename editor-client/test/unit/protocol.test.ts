import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { budgetCanHelp, callGraphEdges, clampTokens, confidenceOf, readCard, readEnvelope, readFact, readIndexStatus, readRef } from '../../src/protocol';

/** Answers the real server gave on fixtures/python_repo (scripts/record_answers.py, over LSP). */
const recorded = (name: string): unknown => JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', `${name}.json`), 'utf8'));

describe('readIndexStatus', () => {
  it('reads every documented field', () => {
    const status = readIndexStatus({
      files: 7,
      symbols: 41,
      edges: 63,
      languages: { python: 7 },
      indexedCommit: 'abc123',
      dirty: true,
      openBuffers: ['file:///ws/a.py'],
      pending: 2,
      lastUpdate: '2025-01-02T03:04:05Z',
      state: 'indexing',
      policyFingerprint: 'f00d',
    });
    expect(status).toEqual({
      files: 7,
      symbols: 41,
      edges: 63,
      languages: { python: 7 },
      indexedCommit: 'abc123',
      dirty: true,
      openBuffers: ['file:///ws/a.py'],
      pending: 2,
      lastUpdate: '2025-01-02T03:04:05Z',
      state: 'indexing',
      policyFingerprint: 'f00d',
    });
  });

  it('reads the status the server sends (recorded)', () => {
    const status = readIndexStatus(recorded('indexStatus'));
    // the commit, time and policy fingerprint change with each recording: their form is checked
    expect(status?.indexedCommit).toMatch(/^[0-9a-f]{40}$/);
    expect(status?.lastUpdate).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(status?.policyFingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect({ ...status, indexedCommit: null, lastUpdate: null, policyFingerprint: null }).toEqual({
      files: 6,
      symbols: 23,
      edges: 23,
      languages: { markdown: 1, python: 5 },
      indexedCommit: null,
      dirty: false,
      openBuffers: [],
      pending: 0,
      lastUpdate: null,
      state: 'ready',
      policyFingerprint: null,
    });
  });

  it('fills missing or wrong-typed fields with neutral values', () => {
    expect(readIndexStatus({ files: '7', languages: { python: 'x', go: 2 }, openBuffers: 'nope' })).toEqual({
      files: 0,
      symbols: 0,
      edges: 0,
      languages: { go: 2 },
      indexedCommit: null,
      dirty: false,
      openBuffers: [],
      pending: 0,
      lastUpdate: null,
      state: 'ready',
      policyFingerprint: null,
    });
    expect(readIndexStatus(null)).toBeNull();
    expect(readIndexStatus([1, 2])).toBeNull();
  });
});

describe('readEnvelope', () => {
  it('reads tokens, budget, raw cost, omissions and provenance', () => {
    const env = readEnvelope({
      tokens: 412,
      maxTokens: 2000,
      rawTokens: 9812,
      truncated: true,
      omitted: [{ what: 'callers', count: 12, hint: 'raise maxTokens' }, 'tests'],
      provenance: { legs: ['exact', 'bm25'], freshness: 'fresh' },
      resultBytes: 1648,
    });
    expect(env).toEqual({
      tokens: 412,
      maxTokens: 2000,
      rawTokens: 9812,
      truncated: true,
      omitted: [
        { what: 'callers', count: 12, hint: 'raise maxTokens', items: [], listed: [] },
        { what: 'tests', count: null, hint: null, items: [], listed: [] },
      ],
      resultBytes: 1648,
      provenance: { legs: ['exact', 'bm25'], freshness: 'fresh' },
    });
  });

  it('accepts the peer-style _est_tokens/_result_bytes names and tolerates junk', () => {
    expect(readEnvelope({ _est_tokens: 30, _result_bytes: 120, omitted: [42, null] })).toEqual({
      tokens: 30,
      maxTokens: null,
      rawTokens: null,
      truncated: false,
      omitted: [{ what: '42', count: null, hint: null, items: [], listed: [] }],
      resultBytes: 120,
      provenance: null,
    });
    expect(readEnvelope('text').tokens).toBeNull();
  });

  it('names a leg that could not answer fully with its state and reason', () => {
    const env = readEnvelope({
      tokens: 300,
      provenance: {
        legs: ['exact', 'lexical', { leg: 'dense', state: 'pending', reason: '120 of 400 symbols embedded' }, { leg: 'graph' }],
        freshness: { state: 'ready' },
      },
    });
    expect(env.provenance?.legs).toEqual(['exact', 'lexical', 'dense (pending: 120 of 400 symbols embedded)', 'graph']);
  });
});

describe('readCard', () => {
  it('reads the card the server sends (recorded: shop.cart.Cart.total)', () => {
    const card = readCard((recorded('symbolCardTotal') as { card: unknown }).card);
    expect(card).toEqual({
      qualifiedName: 'shop.cart.Cart.total',
      name: null,
      kind: 'method',
      signature: 'def total(self, percent=0)',
      path: 'shop/cart.py',
      startLine: 24,
      endLine: 28,
      summary: 'Total price after discount and tax.',
      annotations: [],
      counts: { callers: 2, callees: 3, tests: 1 },
      callers: [
        { label: 'shop.cart.Cart.checkout', selector: 'shop.cart.Cart.checkout', path: 'shop/cart.py', line: 32, detail: null, tooltip: 'resolution self, confidence 0.95' },
        { label: 'test_cart.test_total', selector: 'test_cart.test_total', path: 'tests/test_cart.py', line: 8, detail: 'inferred', tooltip: 'resolution inferred, confidence 0.85' },
      ],
      // a callee's call is in the card's own file; a call site without a resolution is an import
      callees: [
        { label: 'sum', selector: 'sum', path: 'shop/cart.py', line: 26, detail: 'external', tooltip: 'resolution external, confidence 0' },
        { label: 'shop.pricing.apply_discount', selector: 'shop.pricing.apply_discount', path: 'shop/cart.py', line: 27, detail: null, tooltip: 'resolution module, confidence 0.95' },
        { label: 'shop.pricing.with_tax', selector: 'shop.pricing.with_tax', path: 'shop/cart.py', line: 28, detail: null, tooltip: 'resolution import, confidence 0.95' },
      ],
      tests: [{ label: 'test_cart.test_total', selector: 'test_cart.test_total', path: 'tests/test_cart.py', line: 5, detail: null }],
      foundBy: [],
    });
  });

  it('reads the callers of a task answer\'s cards, which the server gives as names (recorded minimalContext)', () => {
    const cards = (recorded('minimalContext') as { cards: unknown[] }).cards.map(readCard);
    expect(cards[0]?.qualifiedName).toBe('shop.cart.Cart.total');
    expect(cards[0]?.callers).toEqual([
      { label: 'shop.cart.Cart.checkout', selector: 'shop.cart.Cart.checkout', path: null, line: null, detail: null },
      { label: 'test_cart.test_total', selector: 'test_cart.test_total', path: null, line: null, detail: null },
    ]);
    expect(cards[0]?.foundBy).toEqual(['dense', 'exact', 'graph', 'lexical']);
  });

  it('turns an annotations object into "key: value" lines', () => {
    expect(readCard({ name: 'f', kind: 'function', annotations: { owner: 'payments', risk: 2 } })?.annotations).toEqual([
      'owner: payments',
      'risk: 2',
    ]);
  });
});

describe('server shape variants', () => {
  it('reads [start, end] ranges, card tests and unresolved calls', () => {
    const card = readCard({
      qualifiedName: 'shop.pricing.apply_discount',
      kind: 'function',
      range: [6, 8],
      callees: [{ qualifiedName: 'round', path: 'shop/pricing.py', line: 8, resolution: 'external', confidence: 0.0, unresolved: true }],
      tests: [{ qualifiedName: 'test_cart.test_discount', path: 'tests/test_cart.py', line: 11 }],
    });
    expect([card?.startLine, card?.endLine]).toEqual([6, 8]);
    expect(card?.callees).toEqual([
      // "confidence 0" is a diagnostic: in the tooltip, not beside the name
      { label: 'round', selector: 'round', path: 'shop/pricing.py', line: 8, detail: 'unresolved', tooltip: 'resolution external, confidence 0' },
    ]);
    expect(card?.tests).toEqual([
      { label: 'test_cart.test_discount', selector: 'test_cart.test_discount', path: 'tests/test_cart.py', line: 11, detail: null },
    ]);
  });

  it('fills what a compact answer leaves out: a callee\'s file is the card\'s, resolution import, confidence the resolution\'s usual one', () => {
    const card = readCard({
      qualifiedName: 'shop.cart.Cart.total',
      kind: 'method',
      path: 'shop/cart.py',
      range: [24, 28],
      counts: { callers: 1, callees: 2 },
      callers: [{ qualifiedName: 'shop.cart.Cart.checkout', path: 'shop/cart.py', line: 32, resolution: 'self' }],
      callees: [
        { qualifiedName: 'shop.pricing.with_tax', line: 28 },
        { qualifiedName: 'gateway.charge', line: 27, resolution: 'unresolved' },
      ],
    });
    expect(card?.callers).toEqual([
      { label: 'shop.cart.Cart.checkout', selector: 'shop.cart.Cart.checkout', path: 'shop/cart.py', line: 32, detail: null, tooltip: 'resolution self, confidence 0.95' },
    ]);
    expect(card?.callees).toEqual([
      { label: 'shop.pricing.with_tax', selector: 'shop.pricing.with_tax', path: 'shop/cart.py', line: 28, detail: null, tooltip: 'resolution import, confidence 0.95' },
      { label: 'gateway.charge', selector: 'gateway.charge', path: 'shop/cart.py', line: 27, detail: 'unresolved', tooltip: 'resolution unresolved, confidence 0' },
    ]);
    expect(confidenceOf('inferred', null)).toBe(0.85);
    expect(confidenceOf('local', 0.95)).toBe(0.95);
    expect(confidenceOf('constructor', null)).toBeNull();
  });

  it('writes out the calls of a call graph from its nodes\' call sites', () => {
    const answer = {
      root: { qualifiedName: 'shop.pricing.with_tax', kind: 'function', path: 'shop/pricing.py', range: [11, 13] },
      callers: {
        nodes: [
          { qualifiedName: 'shop.cart.Cart.total', kind: 'method', path: 'shop/cart.py', range: [24, 28], sites: [{ line: 28 }] },
          {
            qualifiedName: 'test_cart.test_total',
            depth: 2,
            kind: 'test',
            path: 'tests/test_cart.py',
            range: [5, 8],
            sites: [{ to: 'shop.cart.Cart.total', line: 8, resolution: 'inferred' }],
          },
        ],
      },
      callees: {
        nodes: [{ qualifiedName: 'round', kind: 'function', path: 'shop/util.py', range: [1, 2], sites: [{ path: 'shop/gen.py', line: 3, confidence: 0.5 }] }],
      },
    };
    expect(callGraphEdges(answer, 'callers')).toEqual([
      { from: 'shop.cart.Cart.total', to: 'shop.pricing.with_tax', path: 'shop/cart.py', line: 28, resolution: 'import', confidence: 0.95 },
      { from: 'test_cart.test_total', to: 'shop.cart.Cart.total', path: 'tests/test_cart.py', line: 8, resolution: 'inferred', confidence: 0.85 },
    ]);
    expect(callGraphEdges(answer, 'callees')).toEqual([
      { from: 'shop.pricing.with_tax', to: 'round', path: 'shop/gen.py', line: 3, resolution: 'import', confidence: 0.5 },
    ]);
    // an older server's edges list is read as it is
    expect(callGraphEdges({ callers: { edges: [{ from: 'a', to: 'b', path: 'a.py', line: 1, resolution: 'local', confidence: 1 }] } }, 'callers')).toEqual([
      { from: 'a', to: 'b', path: 'a.py', line: 1, resolution: 'local', confidence: 1 },
    ]);
  });

  it('reads the omitted object of recall answers', () => {
    expect(readEnvelope({ omitted: { entries: 2, facts: 0, howToGetMore: 'ask a narrower query' } }).omitted).toEqual([
      { what: 'entries', count: 2, hint: 'ask a narrower query', items: [], listed: [] },
    ]);
  });

  it('reads the names an omission lists, and whether a larger budget can bring anything back', () => {
    const env = readEnvelope({
      truncated: true,
      omitted: [{ what: 'alternatives', count: 2, hint: 'name the symbol', alternatives: ['a.b', { qualifiedName: 'c.d' }] }],
    });
    expect(env.omitted[0]?.items).toEqual(['a.b', 'c.d']);
    expect(budgetCanHelp(env)).toBe(false);
    expect(budgetCanHelp(readEnvelope({ truncated: true, omitted: [{ what: 'callers', count: 3, hint: 'raise maxTokens or name the symbol' }] }))).toBe(true);
    expect(budgetCanHelp(readEnvelope({ truncated: true }))).toBe(true);
    expect(budgetCanHelp(readEnvelope({ truncated: false }))).toBe(false);
  });
});

describe('readRef and readFact', () => {
  it('returns null for things that name nothing', () => {
    expect(readRef(5)).toBeNull();
    expect(readRef({ path: 'a.py' })).toBeNull();
  });
  it('reads facts with entity objects as ends', () => {
    expect(readFact({ subject: { name: 'Cart' }, predicate: 'note', object: 'rounds half-even', confidence: 0.9 })).toEqual({
      subject: 'Cart',
      predicate: 'note',
      object: 'rounds half-even',
      confidence: 0.9,
    });
    expect(readFact({ subject: 'x' })).toBeNull();
  });
  it('reads a fact without confidence as the default 1.0', () => {
    expect(readFact({ subject: 'switchMap', predicate: 'cancels', object: 'inner subscription', createdAt: '2026-11-30T06:50:39.679Z' })).toEqual({
      subject: 'switchMap',
      predicate: 'cancels',
      object: 'inner subscription',
      confidence: 1,
    });
  });
});

describe('clampTokens', () => {
  it('keeps budgets within 256..20000', () => {
    expect(clampTokens(10)).toBe(256);
    expect(clampTokens(1500)).toBe(1500);
    expect(clampTokens(1500.6)).toBe(1501);
    expect(clampTokens(99_999)).toBe(20_000);
    expect(clampTokens(Number.NaN)).toBe(20_000);
  });
});
