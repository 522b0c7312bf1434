import { describe, expect, it } from 'vitest';
import { DEFAULT_BUDGETS, readSettings } from '../../src/config';

function cfg(values: Record<string, unknown>) {
  return { get: <T>(key: string): T | undefined => values[key] as T | undefined };
}

describe('readSettings', () => {
  it('uses the defaults when nothing is set', () => {
    expect(readSettings(cfg({}))).toEqual({
      settings: {
        pythonPath: '',
        serverCommand: [],
        serverEnv: {},
        initializationOptions: {},
        budgets: { symbolCard: 2000, symbolContext: 20000, callGraph: 20000, minimalContext: 1500, prContext: 20000 },
        callGraphDepth: 2,
        callGraphLimit: 25,
        refreshSeconds: 5,
      },
      warnings: [],
    });
    expect(DEFAULT_BUDGETS.minimalContext).toBe(1500);
  });

  it('clamps or replaces invalid values and says so', () => {
    const { settings, warnings } = readSettings(
      cfg({
        pythonPath: 42,
        serverCommand: 'codesynapse  serve --stdio',
        serverEnv: { A: '1', B: 2 },
        'budget.minimalContext': 50,
        'budget.prContext': 'lots',
        'callGraph.depth': 9,
        'statusBar.refreshSeconds': 2.4,
      }),
    );
    expect(settings.pythonPath).toBe('');
    expect(settings.serverCommand).toEqual(['codesynapse', 'serve', '--stdio']);
    expect(settings.serverEnv).toEqual({ A: '1' });
    expect(settings.budgets.minimalContext).toBe(256);
    expect(settings.budgets.prContext).toBe(20000);
    expect(settings.callGraphDepth).toBe(5);
    expect(settings.refreshSeconds).toBe(2);
    expect(warnings).toEqual([
      { key: 'codesynapse.pythonPath', message: 'expected a string; using the default' },
      { key: 'codesynapse.serverEnv', message: 'value of B is not a string; ignored' },
      { key: 'codesynapse.budget.minimalContext', message: 'must be a whole number from 256 to 20000; using 256' },
      { key: 'codesynapse.budget.prContext', message: 'must be a whole number from 256 to 20000; using 20000' },
      { key: 'codesynapse.callGraph.depth', message: 'must be 1 to 5; using 5' },
    ]);
  });

  it('turns findings diagnostics off through the initialization options, unless they say otherwise', () => {
    expect(readSettings(cfg({ 'diagnostics.findings': false })).settings.initializationOptions).toEqual({
      findingsDiagnostics: false,
    });
    expect(
      readSettings(cfg({ 'diagnostics.findings': false, initializationOptions: { findingsDiagnostics: true, workers: 2 } }))
        .settings.initializationOptions,
    ).toEqual({ findingsDiagnostics: true, workers: 2 });
    expect(readSettings(cfg({ 'diagnostics.findings': true })).settings.initializationOptions).toEqual({});
    expect(readSettings(cfg({ 'diagnostics.findings': 'no' })).warnings).toEqual([
      { key: 'codesynapse.diagnostics.findings', message: 'expected true or false; using true' },
    ]);
  });
});
