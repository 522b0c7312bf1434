import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readEnvelope } from '../../src/protocol';
import { escapeHtml, freshnessNote, meterFigures, renderCard, renderMeter, renderResult, renderValue } from '../../src/views/render';
import { readCard } from '../../src/protocol';

describe('token meter', () => {
  it('shows returned tokens against the budget and the raw-file cost', () => {
    const env = readEnvelope({ tokens: 412, maxTokens: 2000, rawTokens: 9812 });
    expect(meterFigures(env, 1500)).toEqual({
      tokens: 412,
      budget: 2000,
      raw: 9812,
      rawSource: 'server',
      rawFiles: null,
      savedPercent: 95.8,
      usedPercent: 21,
    });
    // the server's own figure wins over the editor's estimate
    expect(meterFigures(env, 1500, { tokens: 5, files: 1 }).raw).toBe(9812);
    const html = renderMeter(env, 1500);
    expect(html).toContain('data-tokens="412" data-budget="2000" data-raw="9812" data-raw-source="server"');
    expect(html).toContain('412 of 2,000 tokens (21% of budget) · raw files 9,812 tokens · 95.8% saved');
    // bars are scaled to the largest of the three figures (9812)
    expect(html).toContain('<span class="fill" data-fraction="0.0420"></span></span><span class="meter-value">412</span>');
    expect(html).toContain('<span class="fill" data-fraction="1.0000"></span></span><span class="meter-value">9,812</span>');
  });

  it('falls back to the requested budget and says when the raw cost is unknown', () => {
    const html = renderMeter(readEnvelope({ tokens: 300 }), 1500);
    expect(html).toContain('data-tokens="300" data-budget="1500" data-raw=""');
    expect(html).toContain('300 of 1,500 tokens (20% of budget) · raw file cost not reported');
  });

  it('uses the editor estimate of the raw files when the server sends none', () => {
    const html = renderMeter(readEnvelope({ tokens: 301, maxTokens: 1200 }), 1200, { tokens: 2087, files: 3 });
    expect(html).toContain('data-tokens="301" data-budget="1200" data-raw="2087" data-raw-source="editor"');
    expect(html).toContain('<span class="meter-label">Raw files ≈</span>');
    expect(html).toContain('301 of 1,200 tokens (25% of budget) · raw files ≈ 2,087 tokens (3 files) · 85.6% saved');
  });

  it('does not claim a saving when raw is zero', () => {
    expect(meterFigures(readEnvelope({ tokens: 50, maxTokens: 256, rawTokens: 0 }), 256).savedPercent).toBeNull();
  });
});

describe('cards', () => {
  it('renders name, kind, signature, location, counts and clickable callers', () => {
    // recorded: the card of shop.cart.Cart.total (scripts/record_answers.py, over LSP)
    const recorded = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', 'symbolCardTotal.json'), 'utf8')) as { card: unknown };
    const card = readCard(recorded.card);
    expect(card).not.toBeNull();
    const html = renderCard(card!);
    expect(html).toContain('<article class="card" data-qualified-name="shop.cart.Cart.total">');
    expect(html).toContain('<span class="kind">method</span>');
    expect(html).toContain('<pre class="signature">def total(self, percent=0)</pre>');
    expect(html).toContain('data-action="open" data-path="shop/cart.py" data-line="24">shop/cart.py:24–28</button>');
    expect(html).toContain('<p class="summary">Total price after discount and tax.</p>');
    expect(html).toContain('<span class="count" data-count="callers">2 callers</span> · <span class="count" data-count="callees">3 callees</span>');
    expect(html).toContain('<summary>Callers (2)</summary>');
    expect(html).toContain('<button class="link symbol" data-action="card" data-selector="shop.cart.Cart.checkout" title="shop.cart.Cart.checkout">shop.cart.Cart.checkout</button>');
    expect(html).toContain('<summary>Callees (3)</summary>');
    const trimmed = renderCard(readCard({ qualifiedName: 'x.y', counts: { callers: 2 } })!);
    expect(trimmed).toContain('<p class="refs callers none">Callers: none of 2 shown</p>');
  });

  it('escapes everything that comes from the server', () => {
    const html = renderCard(readCard({ name: '<img src=x onerror=alert(1)>', kind: 'function', summary: '"quoted" & <b>' })!);
    expect(html).not.toContain('<img');
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(html).toContain('&quot;quoted&quot; &amp; &lt;b&gt;');
    expect(escapeHtml(`'`)).toBe('&#39;');
  });
});

describe('renderResult', () => {
  it('renders a call graph as a tree: each caller once, its call sites folded under it, the next level nested', () => {
    // recorded: callers of shop.pricing.with_tax, depth 2 (scripts/record_answers.py, over LSP)
    const result = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', 'callGraphCallers.json'), 'utf8')) as unknown;
    const html = renderResult({ title: 'Callers', subtitle: 'shop.pricing.with_tax', budget: 20000, more: null, result });
    expect(html).toContain('<h2>Callers</h2><p class="subtitle" title="shop.pricing.with_tax">shop.pricing.with_tax</p>');
    // the root card first, then the tree
    expect(html).toContain('<article class="card" data-qualified-name="shop.pricing.with_tax">');
    expect(html).toContain('<section class="calltree" data-direction="callers"><h3>Callers (3) <button class="link hierarchy" data-action="hierarchy" data-direction="callers" data-selector="shop.pricing.with_tax" data-path="shop/pricing.py" data-line="11">Open in Call Hierarchy</button></h3>');
    // Cart.total calls with_tax at line 28; checkout and test_total call Cart.total (depth 2), nested under it
    const tree = html.slice(html.indexOf('<ul class="tree">'), html.indexOf('</section>', html.indexOf('class="calltree"')));
    const names = [...tree.matchAll(/<li class="tree-node" data-qualified-name="([^"]+)">/g)].map((m) => m[1]);
    expect(names).toEqual(['shop.cart.Cart.total', 'shop.cart.Cart.checkout', 'test_cart.test_total']);
    const outline = tree
      .replace(/<li class="tree-node" data-qualified-name="[^"]+">/g, '[')
      .replace(/<li class="site">/g, '{')
      .replace(/<\/li>/g, '}')
      .replace(/<[^>]+>/g, '');
    expect(outline).toBe(
      '[method shop.cart.Cart.total 1 call shop/cart.py:24{shop/cart.py:28}' +
        '[method shop.cart.Cart.checkout 1 call shop/cart.py:30{shop/cart.py:32 self}}' +
        '[test test_cart.test_total 1 call tests/test_cart.py:5{tests/test_cart.py:8 inferred}}}',
    );
    // the sites are links to the call, not repeated rows of the same caller
    expect(tree).toContain('<button class="link location" data-action="open" data-path="shop/cart.py" data-line="28" title="shop/cart.py:28">shop/cart.py:28</button>');
    expect(html).not.toContain('class="edge"');
  });

  it('groups several calls of one caller under it', () => {
    const html = renderResult({
      title: 'Callers',
      budget: 20000,
      more: null,
      result: {
        found: true,
        root: { qualifiedName: 'm.f', kind: 'function', path: 'm.py', range: [1, 2] },
        callers: { nodes: [{ qualifiedName: 'm.g', kind: 'function', path: 'm.py', range: [4, 9], sites: [{ line: 5 }, { line: 7 }, { line: 9, resolution: 'inferred' }] }] },
      },
    });
    expect([...html.matchAll(/class="tree-node"/g)]).toHaveLength(1);
    expect(html).toContain('<span class="site-count muted">3 calls</span>');
    expect([...html.matchAll(/<li class="site">/g)]).toHaveLength(3);
  });

  it('shows plain string lists as text, and symbol lists as links', () => {
    const html = renderResult({
      title: 'Context for a task',
      // recorded: the task answer's first card, whose callers are names
      result: { cards: [(JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', 'minimalContext.json'), 'utf8')) as { cards: unknown[] }).cards[0]] },
      budget: 1500,
      more: null,
    });
    // retrieval legs are diagnostics: the card's tooltip, not a "Legs" block after it
    expect(html).not.toContain('Legs');
    expect(html).toContain('<article class="card" data-qualified-name="shop.cart.Cart.total" title="found by dense, exact, graph, lexical">');
    expect(html).toContain('<button class="link symbol" data-action="card" data-selector="shop.cart.Cart.checkout" title="shop.cart.Cart.checkout">shop.cart.Cart.checkout</button>');
  });

  it('puts the subject card of a symbol answer first, without a heading, and says "Not found"', () => {
    const html = renderResult({
      title: 'Symbol card',
      result: { found: true, card: { qualifiedName: 'a.b', kind: 'function', counts: { callers: 1, unresolvedCallers: 2 } }, tokens: 50 },
      budget: 2000,
      more: null,
    });
    expect(html).toContain('<div class="body"><article class="card" data-qualified-name="a.b">');
    expect(html).toContain('1 caller</span> · <span class="count" data-count="unresolvedCallers">2 unresolved callers</span>');
    expect(html).not.toContain('<h3>Card</h3>');
    expect(renderResult({ title: 'Symbol card', result: { found: false, suggestions: ['a.b'] }, budget: 2000, more: null })).toContain(
      '<p class="not-found" role="status">Not found.</p>',
    );
  });

  it('says when no larger budget is possible', () => {
    const html = renderResult({ title: 'T', result: { omitted: [{ what: 'tests', count: 2 }] }, budget: 20000, more: null });
    expect(html).toContain('This is the largest budget the server accepts; narrow the request to see the rest.');
  });

  it('renders a top-level card answer as one card', () => {
    const html = renderResult({
      title: 'Symbol card',
      result: { qualifiedName: 'calc.ops.add', kind: 'function', tokens: 90, maxTokens: 2000, extra: 'x' },
      budget: 2000,
      more: null,
    });
    expect(html.match(/<article class="card"/g)).toHaveLength(1);
    expect(html).toContain('<dt>Extra</dt><dd>x</dd>');
  });

  it('renders memory facts and odd shapes without throwing', () => {
    expect(renderValue([{ subject: 'Cart', predicate: 'note', object: 'rounds half-even' }])).toBe(
      '<ul class="facts"><li class="fact"><span class="subject">Cart</span> <span class="predicate">note</span> <span class="object">rounds half-even</span></li></ul>',
    );
    expect(renderValue([{ subject: 'Cart', predicate: 'note', object: 'rounds half-even', confidence: 0.7 }])).toBe(
      '<ul class="facts"><li class="fact"><span class="subject">Cart</span> <span class="predicate">note</span> <span class="object">rounds half-even</span> <span class="detail">(0.7)</span></li></ul>',
    );
    for (const odd of [null, undefined, 7, 'text', [], [[1, [2, [3, [4]]]]], { a: { b: { c: { d: { e: 1 } } } } }, [null, {}, 'x']]) {
      expect(() => renderResult({ title: 'x', result: odd, budget: null, more: null })).not.toThrow();
    }
    expect(renderResult({ title: 'x', result: null, budget: null, more: null })).toContain('No answer.');
    expect(renderResult({ title: 'x', result: {}, budget: null, more: null })).toContain('The answer is empty.');
  });

  it('puts diagnostics (legs, bytes, confidence, fingerprints, leg reports) behind one "Details" disclosure', () => {
    const read = (n: string): unknown => JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', `${n}.json`), 'utf8'));
    // a recorded task answer: its cards carry legs
    const task = renderResult({ title: 'Context for a task', budget: 1500, more: null, result: read('minimalContext') });
    const body = task.slice(task.indexOf('<div class="body">'), task.indexOf('<section class="omitted">'));
    expect(body).not.toMatch(/Legs|bytes|confidence/);
    expect(task).toContain('<details class="diagnostics"><summary>Details</summary><p class="provenance">found by exact, lexical, dense, graph · index ready · 2,830 bytes</p></details>');
    // a leg that did not run is reported as the server sends it while the model loads
    const pending = read('minimalContext') as { provenance: { legs: unknown[] } };
    pending.provenance.legs = pending.provenance.legs.map((l) => (l === 'dense' ? { leg: 'dense', state: 'pending', reason: 'the embedding model is loading' } : l));
    expect(renderResult({ title: 'Context for a task', budget: 1500, more: null, result: pending })).toContain(
      '<p class="provenance">found by exact, lexical, dense (pending: the embedding model is loading), graph · index ready · 2,830 bytes</p>',
    );
    // a recorded card: the confidence of the callee typed from its callers (gateway.charge on a
    // parameter every caller passes a Gateway to) is in the tooltip, not beside the name
    const card = renderResult({ title: 'Symbol card', budget: 2000, more: null, result: read('symbolCard') });
    expect(card.replace(/<[^>]*>/g, '')).not.toContain('confidence'); // only in the tooltip
    expect(card).toContain('<li class="ref" title="resolution inferred, confidence 0.75"><button class="link symbol" data-action="card" data-selector="shop.payment.Gateway.charge" title="shop.payment.Gateway.charge">shop.payment.Gateway.charge</button> <button class="link location" data-action="open" data-path="shop/cart.py" data-line="33">shop/cart.py:33</button> <span class="detail">inferred</span></li>');
    // recall's leg reports ("Ran yes / Hits 0") and index status' fingerprint go to Details
    const recall = renderResult({ title: 'Recall', budget: null, more: null, result: read('recall') });
    const recallBody = recall.slice(recall.indexOf('<div class="body">'), recall.indexOf('<details class="diagnostics">'));
    expect(recallBody).not.toMatch(/Ran|Hits|Found by/);
    expect(recall.slice(recall.indexOf('<details class="diagnostics">'))).toContain('<dt>Ran</dt><dd>yes</dd><dt>Hits</dt><dd>0</dd>');
    const status = renderResult({ title: 'Index status', budget: null, more: null, result: read('indexStatus') });
    const statusBody = status.slice(status.indexOf('<div class="body">'), status.indexOf('<details class="diagnostics">'));
    expect(statusBody).not.toContain('Policy fingerprint');
    expect(status.slice(status.indexOf('<details class="diagnostics">'))).toContain('<dt>Policy fingerprint</dt>');
  });

  it('marks an answer from an index that is not current, with Refresh', () => {
    const read = (n: string): unknown => JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', `${n}.json`), 'utf8'));
    // a search answered before the server indexed the folder (as `query --no-index` answers it)
    const answer = read('search') as { provenance: { freshness: unknown } };
    answer.provenance.freshness = { state: 'idle', lastUpdate: '2026-12-01T14:59:11Z' };
    const idle = renderResult({ title: 'Search', budget: null, more: null, result: answer });
    expect(idle).toContain(
      '<div class="stale" role="status"><span class="stale-text">The server has not indexed the folder yet: this answer comes from an older index, or none.</span> <button class="refresh" data-action="refresh">Refresh</button></div>',
    );
    expect(idle).toContain('<div class="result is-stale">');
    // a ready index with nothing pending: current, no banner
    expect(renderResult({ title: 'Symbol card', budget: 2000, more: null, result: read('symbolCard') })).not.toContain('class="stale"');
    const env = (freshness: unknown) => readEnvelope({ provenance: { legs: [], freshness } });
    expect(freshnessNote(env({ state: 'indexing' }))).toBe('The index is still being built: this answer may miss files not indexed yet.');
    expect(freshnessNote(env({ state: 'ready', pending: 3 }))).toBe('3 changes are not indexed yet: this answer may not reflect them.');
    expect(freshnessNote(env({ state: 'failed' }))).toBe('The last index of the folder failed: this answer comes from the index before it (see the log).');
  });

  it('says "no saving" instead of a negative saving when the answer is larger than the raw files', () => {
    expect(renderMeter(readEnvelope({ tokens: 573, maxTokens: 1500, rawTokens: 402 }), 1500)).toContain(
      '573 of 1,500 tokens (38% of budget) · raw files 402 tokens · no saving (42.5% more than the raw files)',
    );
    expect(renderMeter(readEnvelope({ tokens: 100, maxTokens: 1500, rawTokens: 100 }), 1500)).toContain('raw files 100 tokens · no saving');
  });
});
