import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimateRawCost, referencedPaths } from '../../src/rawCost';

/** The card the real server gave for shop.cart.Cart.total (scripts/record_answers.py, over LSP),
 *  plus two paths no server answer holds: one outside the workspace and one deleted since. */
const recorded = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', 'symbolCardTotal.json'), 'utf8')) as Record<string, unknown>;
const answer = { ...recorded, outside: { path: '../../etc/passwd' }, gone: { path: 'shop/deleted.py' } };

describe('referencedPaths', () => {
  it('collects distinct path fields', () => {
    // the card's file (also its callers' and callees'), its test's file, then the two added
    expect(referencedPaths(answer)).toEqual(['shop/cart.py', 'tests/test_cart.py', '../../etc/passwd', 'shop/deleted.py']);
  });

  it('leaves out paths under provenance', () => {
    expect(referencedPaths({ provenance: { legs: ['exact'], freshness: { path: 'ignored.py' } }, card: { path: 'a.py' } })).toEqual(['a.py']);
  });
});

describe('estimateRawCost (real files)', () => {
  let root: string;
  beforeAll(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'cs-raw-'));
    fs.mkdirSync(path.join(root, 'shop'));
    fs.mkdirSync(path.join(root, 'tests'));
    fs.writeFileSync(path.join(root, 'shop', 'pricing.py'), 'x'.repeat(401)); // 101 tokens, not named by the card
    fs.writeFileSync(path.join(root, 'shop', 'cart.py'), 'y'.repeat(800)); // 200 tokens
    fs.writeFileSync(path.join(root, 'tests', 'test_cart.py'), 'z'.repeat(3)); // 1 token
  });
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('sums ceil(bytes / 4) over existing files inside the workspace', () => {
    expect(estimateRawCost(answer, root)).toEqual({ tokens: 201, files: 2 });
  });

  it('is null when the answer names no readable file', () => {
    expect(estimateRawCost({ entries: [], facts: [] }, root)).toBeNull();
    expect(estimateRawCost({ path: 'nope.py' }, root)).toBeNull();
  });
});
