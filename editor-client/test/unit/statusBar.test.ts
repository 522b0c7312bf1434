import { describe, expect, it } from 'vitest';
import { readIndexStatus } from '../../src/protocol';
import { formatAge, formatConnectionState, formatIndexStatus } from '../../src/statusBar';

const now = new Date('2025-06-01T12:00:00Z');

describe('formatAge', () => {
  it('speaks in seconds, minutes, hours and days', () => {
    expect(formatAge('2025-06-01T11:59:48Z', now)).toBe('12 s ago');
    expect(formatAge('2025-06-01T11:57:00Z', now)).toBe('3 min ago');
    expect(formatAge('2025-06-01T09:00:00Z', now)).toBe('3 h ago');
    expect(formatAge('2025-05-27T12:00:00Z', now)).toBe('5 d ago');
    expect(formatAge('not a date', now)).toBeNull();
    expect(formatAge(null, now)).toBeNull();
  });
});

describe('formatIndexStatus', () => {
  const base = {
    files: 1234,
    symbols: 5678,
    edges: 9012,
    languages: { python: 1200, markdown: 34 },
    indexedCommit: '0123456789abcdef',
    dirty: true,
    openBuffers: ['file:///ws/a.py', 'shop/b.py'],
    pending: 0,
    lastUpdate: '2025-06-01T11:59:48Z',
    state: 'ready',
    policyFingerprint: 'sha256:abcdefabcdefabcdef',
  };

  it('shows a ready index with its size and freshness in the tooltip', () => {
    const view = formatIndexStatus(readIndexStatus(base)!, [], now);
    expect(view.text).toBe('$(database) CodeSynapse: 1,234 files');
    expect(view.tooltip).toBe(
      [
        'Index is ready, updated 12 s ago',
        '1,234 files, 5,678 symbols, 9,012 edges',
        'Languages: python 1,200, markdown 34',
        'Pending changes: 0',
        'Open buffers served: 2 (0 unsaved)',
        'Commit: 0123456789ab + uncommitted changes',
        'Policy: sha256:abcdefabc',
        '',
        'Click for details.',
      ].join('\n'),
    );
  });

  it('counts pending changes and unsaved buffers the server serves (by URI or relative path)', () => {
    const view = formatIndexStatus(
      readIndexStatus({ ...base, state: 'indexing', pending: 3 })!,
      [
        { uri: 'file:///ws/shop/b.py', relativePath: 'shop/b.py' },
        { uri: 'file:///ws/a.py', relativePath: 'a.py' },
        { uri: 'file:///ws/unknown.py', relativePath: 'unknown.py' },
      ],
      now,
    );
    expect(view.text).toBe('$(sync~spin) CodeSynapse: indexing · 1,234 files · 3 pending · 2 unsaved');
  });
});

describe('formatConnectionState', () => {
  it('shows start, stop and failure', () => {
    expect(formatConnectionState({ kind: 'starting' })?.text).toBe('$(loading~spin) CodeSynapse: starting');
    expect(formatConnectionState({ kind: 'stopped' })?.text).toBe('$(circle-slash) CodeSynapse: stopped');
    expect(formatConnectionState({ kind: 'failed', message: 'no python' })).toEqual({
      text: '$(error) CodeSynapse: not running',
      tooltip: 'no python\n\nClick to show the log.',
      warning: false,
      error: true,
    });
  });
});
