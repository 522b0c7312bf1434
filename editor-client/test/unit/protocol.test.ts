import { describe, expect, it } from 'vitest';
import { clampTokens, readCard, readEnvelope, readFact, readIndexStatus, readRef } from '../../src/protocol';

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
        { what: 'callers', count: 12, hint: 'raise maxTokens' },
        { what: 'tests', count: null, hint: null },
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
      omitted: [{ what: '42', count: null, hint: null }],
      resultBytes: 120,
      provenance: null,
    });
    expect(readEnvelope('text').tokens).toBeNull();
  });
});

describe('readCard', () => {
  it('reads the documented card shape', () => {
    const card = readCard({
      qualifiedName: 'shop.cart.Cart.total',
      name: 'total',
      kind: 'method',
      signature: 'def total(self) -> Decimal',
      path: 'shop/cart.py',
      range: { startLine: 20, endLine: 31 },
      summary: 'Sum of line prices after discounts.',
      annotations: ['hot path'],
      counts: { callers: 3, callees: 2, implementations: 0, tests: 1 },
      callers: ['shop.checkout.checkout', { qualifiedName: 'shop.api.cart_view', path: 'shop/api.py', range: { startLine: 8, endLine: 12 }, resolution: 'name', confidence: 0.5 }],
      callees: [{ name: 'line_price' }],
    });
    expect(card).toEqual({
      qualifiedName: 'shop.cart.Cart.total',
      name: 'total',
      kind: 'method',
      signature: 'def total(self) -> Decimal',
      path: 'shop/cart.py',
      startLine: 20,
      endLine: 31,
      summary: 'Sum of line prices after discounts.',
      annotations: ['hot path'],
      counts: { callers: 3, callees: 2, implementations: 0, tests: 1 },
      callers: [
        { label: 'shop.checkout.checkout', selector: 'shop.checkout.checkout', path: null, line: null, detail: null },
        { label: 'shop.api.cart_view', selector: 'shop.api.cart_view', path: 'shop/api.py', line: 8, detail: 'name, confidence 0.5' },
      ],
      callees: [{ label: 'line_price', selector: 'line_price', path: null, line: null, detail: null }],
      tests: [],
    });
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
      { label: 'round', selector: 'round', path: 'shop/pricing.py', line: 8, detail: 'unresolved, external, confidence 0' },
    ]);
    expect(card?.tests).toEqual([
      { label: 'test_cart.test_discount', selector: 'test_cart.test_discount', path: 'tests/test_cart.py', line: 11, detail: null },
    ]);
  });

  it('reads the omitted object of recall answers', () => {
    expect(readEnvelope({ omitted: { entries: 2, facts: 0, howToGetMore: 'ask a narrower query' } }).omitted).toEqual([
      { what: 'entries', count: 2, hint: 'ask a narrower query' },
    ]);
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
