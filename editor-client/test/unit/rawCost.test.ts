import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimateRawCost, referencedPaths } from '../../src/rawCost';

const answer = {
  card: {
    qualifiedName: 'shop.pricing.apply_discount',
    path: 'shop/pricing.py',
    callers: [
      { qualifiedName: 'shop.cart.Cart.total', path: 'shop/cart.py', line: 27 },
      { qualifiedName: 'test_cart.test_discount', path: 'tests/test_cart.py', line: 12 },
    ],
    tests: [{ qualifiedName: 'test_cart.test_discount', path: 'tests/test_cart.py', line: 11 }],
  },
  provenance: { legs: ['exact'], freshness: { path: 'ignored.py' } },
  outside: { path: '../../etc/passwd' },
  gone: { path: 'shop/deleted.py' },
};

describe('referencedPaths', () => {
  it('collects distinct path fields, not those in provenance', () => {
    expect(referencedPaths(answer)).toEqual(['shop/pricing.py', 'shop/cart.py', 'tests/test_cart.py', '../../etc/passwd', 'shop/deleted.py']);
  });
});

describe('estimateRawCost (real files)', () => {
  let root: string;
  beforeAll(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'cs-raw-'));
    fs.mkdirSync(path.join(root, 'shop'));
    fs.mkdirSync(path.join(root, 'tests'));
    fs.writeFileSync(path.join(root, 'shop', 'pricing.py'), 'x'.repeat(401)); // 101 tokens
    fs.writeFileSync(path.join(root, 'shop', 'cart.py'), 'y'.repeat(800)); // 200 tokens
    fs.writeFileSync(path.join(root, 'tests', 'test_cart.py'), 'z'.repeat(3)); // 1 token
  });
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('sums ceil(bytes / 4) over existing files inside the workspace', () => {
    expect(estimateRawCost(answer, root)).toEqual({ tokens: 302, files: 3 });
  });

  it('is null when the answer names no readable file', () => {
    expect(estimateRawCost({ entries: [], facts: [] }, root)).toBeNull();
    expect(estimateRawCost({ path: 'nope.py' }, root)).toBeNull();
  });
});
