import * as fs from 'node:fs';
import * as path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import * as vscode from './vscode.mock';
import { ProgressNotification, progressText } from '../../src/progress';
import { formatIndexStatus } from '../../src/statusBar';
import { readIndexStatus } from '../../src/protocol';
import { parsePanelMessage } from '../../src/views/panel';
import { WELCOME_COMMANDS, renderWelcome } from '../../src/views/render';

const root = path.resolve(__dirname, '../..');
interface Pkg {
  contributes: {
    commands: { command: string; title: string }[];
    keybindings: { command: string; key: string; mac: string }[];
    submenus: { id: string; label: string }[];
    menus: Record<string, { command?: string; submenu?: string }[]>;
    walkthroughs: { id: string; steps: { id: string; description: string; media: { markdown: string } }[] }[];
  };
}
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as Pkg;
const declared = new Set(pkg.contributes.commands.map((c) => c.command));
const log = { info: () => undefined, debug: () => undefined, warn: () => undefined, error: () => undefined } as never;

beforeEach(() => vscode.resetMock());

describe('first index progress', () => {
  it('shows the server\'s work-done progress as a notification with n/m files and %', () => {
    const n = new ProgressNotification(log);
    const texts: (string | null)[] = [];
    n.onDidChange((t) => texts.push(t));
    // the values server/codesynapse/lsp/progress.py sends for an index of 40 files
    n.handle({ kind: 'begin', title: 'CodeSynapse: indexing', message: 'scanning the workspace', percentage: 0 });
    n.handle({ kind: 'report', message: '12/40 files', percentage: 30 });
    n.handle({ kind: 'report', message: '40/40 files', percentage: 100 });
    n.handle({ kind: 'end', message: '40 files, 310 symbols in 1.2 s' });
    expect(vscode.progressReports).toEqual([
      { title: 'CodeSynapse: indexing' },
      { message: 'scanning the workspace · 0%', increment: 0 },
      { message: '12/40 files · 30%', increment: 30 },
      { message: '40/40 files · 100%', increment: 70 },
    ]);
    expect(texts).toEqual(['scanning the workspace · 0%', '12/40 files · 30%', '40/40 files · 100%', null]);
    expect(progressText(undefined, undefined)).toBe('');
  });

  it('puts the progress in the status bar while indexing', () => {
    const status = readIndexStatus({ files: 12, symbols: 0, edges: 0, state: 'indexing' })!;
    expect(formatIndexStatus(status, [], new Date(), '12/40 files · 30%').text).toBe('$(sync~spin) CodeSynapse: indexing · 12/40 files · 30%');
    expect(formatIndexStatus(status, [], new Date()).text).toBe('$(sync~spin) CodeSynapse: indexing · 12 files');
  });
});

describe('onboarding', () => {
  it('has a walkthrough whose steps have their media and run declared commands', () => {
    const [walk] = pkg.contributes.walkthroughs;
    expect(walk?.id).toBe('codesynapse.gettingStarted');
    expect(walk?.steps.map((s) => s.id)).toEqual(['interpreter', 'index', 'card', 'task', 'agents']);
    for (const step of walk?.steps ?? []) {
      expect(fs.existsSync(path.join(root, step.media.markdown))).toBe(true);
      for (const m of step.description.matchAll(/\(command:([\w.]+)\)/g)) {
        expect(declared.has(m[1] as string) || m[1] === 'codesynapse.context.focus').toBe(true);
      }
    }
  });

  it('binds keys to the main commands, for Linux/Windows and macOS', () => {
    expect(pkg.contributes.keybindings.map((k) => [k.command, k.key, k.mac])).toEqual([
      ['codesynapse.showSymbolCard', 'ctrl+alt+shift+c', 'cmd+alt+shift+c'],
      ['codesynapse.showCallers', 'ctrl+alt+shift+i', 'cmd+alt+shift+i'],
      ['codesynapse.showCallees', 'ctrl+alt+shift+o', 'cmd+alt+shift+o'],
      ['codesynapse.contextForTask', 'ctrl+alt+shift+t', 'cmd+alt+shift+t'],
      ['codesynapse.contextForDiff', 'ctrl+alt+shift+d', 'cmd+alt+shift+d'],
    ]);
    for (const k of pkg.contributes.keybindings) expect(declared.has(k.command)).toBe(true);
  });

  it('groups the editor context menu items under a "CodeSynapse" submenu', () => {
    expect(pkg.contributes.menus['editor/context']).toEqual([{ submenu: 'codesynapse.editorContext', group: 'navigation@90' }]);
    expect(pkg.contributes.submenus).toEqual([{ id: 'codesynapse.editorContext', label: 'CodeSynapse' }]);
    const items = pkg.contributes.menus['codesynapse.editorContext']?.map((m) => m.command);
    expect(items).toEqual([
      'codesynapse.showSymbolCard',
      'codesynapse.showSymbolContext',
      'codesynapse.showCallers',
      'codesynapse.showCallees',
      'codesynapse.showInCallHierarchy',
      'codesynapse.rememberSelection',
    ]);
  });

  it('welcomes with buttons that run commands, and the panel runs only those', () => {
    const html = renderWelcome();
    const commands = [...html.matchAll(/data-action="command" data-command="([^"]+)"/g)].map((m) => m[1] as string);
    expect(commands).toEqual([
      'codesynapse.showSymbolCard',
      'codesynapse.showCallers',
      'codesynapse.showCallees',
      'codesynapse.contextForDiff',
      'codesynapse.openWalkthrough',
      'codesynapse.showIndexStatus',
      'codesynapse.selectInterpreter',
    ]);
    for (const c of commands) {
      expect(WELCOME_COMMANDS.has(c)).toBe(true);
      expect(declared.has(c)).toBe(true);
    }
    expect(html).toContain('<kbd>Ctrl+Alt+Shift+C</kbd>');
    expect(parsePanelMessage({ type: 'command', command: 'codesynapse.showCallers' })).toEqual({ type: 'command', command: 'codesynapse.showCallers' });
    expect(parsePanelMessage({ type: 'command', command: 'workbench.action.terminal.new' })).toBeNull();
  });
});
