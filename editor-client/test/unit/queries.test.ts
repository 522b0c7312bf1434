import { describe, expect, it } from 'vitest';
import { Methods } from '../../src/protocol';
import { describeSelector, loadMoreQuery, nameFromSelection, taskParams, truncateUtf8, type Query } from '../../src/queries';

describe('nameFromSelection', () => {
  it('accepts identifiers and dotted names only', () => {
    expect(nameFromSelection('  add ')).toBe('add');
    expect(nameFromSelection('calc.ops.add')).toBe('calc.ops.add');
    expect(nameFromSelection('a b')).toBeNull();
    expect(nameFromSelection('x = 1')).toBeNull();
    expect(nameFromSelection('')).toBeNull();
    expect(nameFromSelection('1abc')).toBeNull();
  });
});

describe('describeSelector', () => {
  it('shows positions 1-based', () => {
    expect(describeSelector({ uri: 'file:///ws/a.py', line: 0, character: 4 }, () => 'a.py')).toBe('a.py:1:5');
    expect(describeSelector('calc.ops.add')).toBe('calc.ops.add');
  });
});

describe('truncateUtf8', () => {
  it('cuts at a byte limit without splitting a character', () => {
    expect(truncateUtf8('héllo', 3)).toEqual({ text: 'hé', truncated: true });
    expect(truncateUtf8('héllo', 2)).toEqual({ text: 'h', truncated: true });
    expect(truncateUtf8('hello', 5)).toEqual({ text: 'hello', truncated: false });
  });
});

describe('taskParams', () => {
  it('trims, caps at 8 KiB and clamps the budget', () => {
    expect(taskParams('  fix rounding  ', 100)).toEqual({ params: { task: 'fix rounding', maxTokens: 256 }, truncated: false });
    const long = taskParams('x'.repeat(9000), 1500);
    expect(long.params.task).toHaveLength(8192);
    expect(long.truncated).toBe(true);
    expect(taskParams('t', 1500, ['a.py']).params).toEqual({ task: 't', maxTokens: 1500, paths: ['a.py'] });
  });
});

describe('loadMoreQuery', () => {
  const card: Query = { title: 'Symbol card', subtitle: 'f', method: Methods.symbolCard, params: { selector: 'f', maxTokens: 1500 } };

  it('doubles the budget up to 20,000', () => {
    expect(loadMoreQuery(card)).toEqual({
      query: { ...card, params: { selector: 'f', maxTokens: 3000 } },
      label: 'Load more (budget 3,000 tokens)',
    });
    const big: Query = { ...card, params: { selector: 'f', maxTokens: 16000 } };
    expect(loadMoreQuery(big)?.query.params).toEqual({ selector: 'f', maxTokens: 20000 });
    expect(loadMoreQuery({ ...card, params: { selector: 'f', maxTokens: 20000 } })).toBeNull();
  });

  it('raises the call-graph node limit once the budget is at its maximum', () => {
    const cg: Query = {
      title: 'Callers',
      subtitle: 'f',
      method: Methods.callGraph,
      params: { selector: 'f', direction: 'callers', depth: 2, limit: 25, maxTokens: 20000 },
    };
    expect(loadMoreQuery(cg)).toEqual({
      query: { ...cg, params: { selector: 'f', direction: 'callers', depth: 2, limit: 50, maxTokens: 20000 } },
      label: 'Load more (up to 50 per direction)',
    });
    expect(loadMoreQuery({ ...cg, params: { selector: 'f', direction: 'callers', limit: 150, maxTokens: 20000 } })?.label).toBe(
      'Load more (up to 200 per direction)',
    );
    expect(loadMoreQuery({ ...cg, params: { selector: 'f', direction: 'callers', limit: 200, maxTokens: 20000 } })).toBeNull();
  });

  it('has nothing to grow for unbudgeted requests', () => {
    expect(loadMoreQuery({ title: 'Recall', subtitle: 'q', method: Methods.recall, params: { query: 'q' } })).toBeNull();
  });
});
