import { describe, expect, it } from 'vitest';
import { nonce, parsePanelMessage, shellHtml } from '../../src/views/panel';

describe('parsePanelMessage', () => {
  it('accepts the messages the webview sends and rejects the rest', () => {
    expect(parsePanelMessage({ type: 'card', selector: 'calc.ops.add' })).toEqual({ type: 'card', selector: 'calc.ops.add' });
    expect(parsePanelMessage({ type: 'open', path: 'calc/ops.py', line: 3 })).toEqual({ type: 'open', path: 'calc/ops.py', line: 3 });
    expect(parsePanelMessage({ type: 'open', path: 'calc/ops.py', line: 'x' })).toEqual({ type: 'open', path: 'calc/ops.py', line: null });
    expect(parsePanelMessage({ type: 'task', task: '  add retries ' })).toEqual({ type: 'task', task: 'add retries' });
    expect(parsePanelMessage({ type: 'more' })).toEqual({ type: 'more' });
    expect(parsePanelMessage({ type: 'task', task: '   ' })).toBeNull();
    expect(parsePanelMessage({ type: 'card' })).toBeNull();
    expect(parsePanelMessage({ type: 'eval', code: '1' })).toBeNull();
    expect(parsePanelMessage('ready')).toBeNull();
  });
});

describe('shellHtml', () => {
  it('allows only its own stylesheet and the nonce script', () => {
    const n = nonce();
    expect(n).toMatch(/^[A-Za-z0-9]{32}$/);
    const html = shellHtml({ cspSource: 'vscode-resource:', styleUri: 'S.css', scriptUri: 'W.js', nonce: n, body: '<p>hi</p>' });
    expect(html).toContain(`content="default-src 'none'; style-src vscode-resource:; script-src 'nonce-${n}';"`);
    expect(html).toContain(`<script nonce="${n}" src="W.js"></script>`);
    expect(html).toContain('<div id="content"><p>hi</p></div>');
    expect(html).toContain('<form id="task-form" aria-label="Context for a task">');
  });
});
