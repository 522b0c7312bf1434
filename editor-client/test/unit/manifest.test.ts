import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/commands';
import { DEFAULT_BUDGETS, RESTART_SETTINGS } from '../../src/config';
import { TOOLS } from '../../src/lmTools';
import { POLICY_VIEW_ID, REFRESH_POLICY_EFFECTS } from '../../src/views/policyEffects';

const root = path.resolve(__dirname, '../..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as {
  engines: { vscode: string };
  main: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  contributes: {
    commands: { command: string; title: string; category: string }[];
    configuration: { properties: Record<string, { default: unknown; minimum?: number; maximum?: number }> };
    languageModelTools: { name: string; inputSchema: { required?: string[]; properties: Record<string, unknown> } }[];
    views: Record<string, { id: string; type: string }[]>;
  };
};

describe('package.json manifest', () => {
  it('targets VS Code 1.95, the first release with the stable language-model tool API', () => {
    expect(pkg.engines.vscode).toBe('^1.95.0');
    expect(pkg.devDependencies['@types/vscode']).toBe('1.95.0');
    expect(pkg.dependencies['vscode-languageclient']).toBe('9.0.1');
    expect(pkg.main).toBe('./dist/extension.js');
  });

  it('contributes exactly the commands the extension registers', () => {
    expect(pkg.contributes.commands.map((c) => c.command).sort()).toEqual([...Object.values(COMMANDS), REFRESH_POLICY_EFFECTS].sort());
    expect(pkg.contributes.commands.every((c) => c.category === 'CodeSynapse')).toBe(true);
  });

  it('declares the budgets with the contract defaults and range', () => {
    const props = pkg.contributes.configuration.properties;
    for (const [key, value] of Object.entries(DEFAULT_BUDGETS)) {
      const prop = props[`codesynapse.budget.${key}`];
      expect([prop?.default, prop?.minimum, prop?.maximum]).toEqual([value, 256, 20000]);
    }
    expect(props['codesynapse.budget.minimalContext']?.default).toBe(1500);
    for (const id of RESTART_SETTINGS) expect(props[id]).toBeDefined();
    expect(props['codesynapse.callGraph.limit']?.maximum).toBe(200);
  });

  it('declares every language-model tool it registers, and no other', () => {
    const declared = pkg.contributes.languageModelTools.map((t) => t.name).sort();
    expect(declared).toEqual(Object.keys(TOOLS).sort());
    expect(declared).toEqual([
      'codesynapse_call_graph',
      'codesynapse_forget',
      'codesynapse_memory_list',
      'codesynapse_minimal_context',
      'codesynapse_pr_context',
      'codesynapse_recall',
      'codesynapse_remember',
      'codesynapse_search',
      'codesynapse_snippet',
      'codesynapse_symbol_card',
      'codesynapse_symbol_context',
    ]);
    for (const tool of pkg.contributes.languageModelTools) {
      for (const req of tool.inputSchema.required ?? []) expect(tool.inputSchema.properties[req]).toBeDefined();
    }
  });

  it('has the side-panel webview view and the Policy Effects tree', () => {
    expect(pkg.contributes.views.codesynapse).toEqual([
      { type: 'webview', id: 'codesynapse.context', name: 'Context' },
      { id: POLICY_VIEW_ID, name: 'Policy Effects', visibility: 'collapsed' },
    ]);
  });
});
