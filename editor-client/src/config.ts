import * as vscode from 'vscode';
import { MAX_CALL_LIMIT, MAX_TOKENS, MIN_TOKENS } from './protocol';

/** Setting ids are owned by package.json; this module reads them with typed fallbacks. */
export const SECTION = 'codesynapse';

/** Settings that change how the server process is started: a change restarts the client. */
export const RESTART_SETTINGS = [
  'codesynapse.pythonPath',
  'codesynapse.serverCommand',
  'codesynapse.serverEnv',
  'codesynapse.initializationOptions',
  'codesynapse.diagnostics.findings',
  'codesynapse.metrics.port',
] as const;

export interface Budgets {
  symbolCard: number;
  symbolContext: number;
  callGraph: number;
  minimalContext: number;
  prContext: number;
}

export const DEFAULT_BUDGETS: Budgets = {
  symbolCard: 2000,
  symbolContext: 20_000,
  callGraph: 20_000,
  minimalContext: 1500,
  prContext: 20_000,
};

export interface Settings {
  pythonPath: string;
  serverCommand: string[];
  serverEnv: Record<string, string>;
  initializationOptions: Record<string, unknown>;
  budgets: Budgets;
  callGraphDepth: number;
  callGraphLimit: number;
  refreshSeconds: number;
}

export interface SettingsWarning {
  key: string;
  message: string;
}

function intIn(value: unknown, fallback: number, min: number, max: number): { value: number; ok: boolean } {
  if (typeof value !== 'number' || !Number.isFinite(value)) return { value: fallback, ok: value === undefined };
  const n = Math.round(value);
  if (n < min || n > max) return { value: Math.min(max, Math.max(min, n)), ok: false };
  return { value: n, ok: true };
}

/**
 * Read the settings from a configuration section. Invalid values fall back (or are clamped)
 * and are reported in `warnings` so the caller can log them once.
 */
export function readSettings(cfg: Pick<vscode.WorkspaceConfiguration, 'get'>): {
  settings: Settings;
  warnings: SettingsWarning[];
} {
  const warnings: SettingsWarning[] = [];
  const warn = (key: string, message: string): void => {
    warnings.push({ key: `${SECTION}.${key}`, message });
  };

  const pythonRaw = cfg.get<unknown>('pythonPath');
  let pythonPath = '';
  if (typeof pythonRaw === 'string') pythonPath = pythonRaw.trim();
  else if (pythonRaw !== undefined && pythonRaw !== null) warn('pythonPath', 'expected a string; using the default');

  const commandRaw = cfg.get<unknown>('serverCommand');
  let serverCommand: string[] = [];
  if (Array.isArray(commandRaw) && commandRaw.every((x) => typeof x === 'string')) {
    serverCommand = (commandRaw).filter((x) => x.length > 0);
  } else if (typeof commandRaw === 'string' && commandRaw.trim()) {
    serverCommand = commandRaw.trim().split(/\s+/);
  } else if (commandRaw !== undefined && commandRaw !== null && commandRaw !== '') {
    warn('serverCommand', 'expected a list of strings; using pythonPath instead');
  }

  const envRaw = cfg.get<unknown>('serverEnv');
  const serverEnv: Record<string, string> = {};
  if (envRaw && typeof envRaw === 'object' && !Array.isArray(envRaw)) {
    for (const [k, v] of Object.entries(envRaw as Record<string, unknown>)) {
      if (typeof v === 'string') serverEnv[k] = v;
      else warn('serverEnv', `value of ${k} is not a string; ignored`);
    }
  }

  const initRaw = cfg.get<unknown>('initializationOptions');
  let initializationOptions =
    initRaw && typeof initRaw === 'object' && !Array.isArray(initRaw) ? (initRaw as Record<string, unknown>) : {};
  // the server publishes findings as diagnostics unless told not to; an explicit
  // initializationOptions.findingsDiagnostics wins over the dedicated setting
  const findingsRaw = cfg.get<unknown>('diagnostics.findings');
  if (findingsRaw === false && !('findingsDiagnostics' in initializationOptions)) {
    initializationOptions = { ...initializationOptions, findingsDiagnostics: false };
  } else if (findingsRaw !== undefined && findingsRaw !== null && typeof findingsRaw !== 'boolean') {
    warn('diagnostics.findings', 'expected true or false; using true');
  }

  // the opt-in metrics endpoint: the server's metricsPort option (an explicit
  // initializationOptions.metricsPort wins over the dedicated setting)
  const metricsRaw = cfg.get<unknown>('metrics.port');
  if (metricsRaw !== undefined && metricsRaw !== null && metricsRaw !== 0) {
    const port = intIn(metricsRaw, 0, 0, 65_535);
    if (!port.ok || port.value !== metricsRaw) warn('metrics.port', 'must be 0 (off) or a port from 1 to 65535; metrics stay off');
    else if (!('metricsPort' in initializationOptions)) initializationOptions = { ...initializationOptions, metricsPort: port.value };
  }

  const budgets = { ...DEFAULT_BUDGETS };
  for (const key of Object.keys(DEFAULT_BUDGETS) as (keyof Budgets)[]) {
    const r = intIn(cfg.get<unknown>(`budget.${key}`), DEFAULT_BUDGETS[key], MIN_TOKENS, MAX_TOKENS);
    budgets[key] = r.value;
    if (!r.ok) warn(`budget.${key}`, `must be a whole number from ${MIN_TOKENS} to ${MAX_TOKENS}; using ${r.value}`);
  }

  const depth = intIn(cfg.get<unknown>('callGraph.depth'), 2, 1, 5);
  if (!depth.ok) warn('callGraph.depth', `must be 1 to 5; using ${depth.value}`);
  const limit = intIn(cfg.get<unknown>('callGraph.limit'), 25, 1, MAX_CALL_LIMIT);
  if (!limit.ok) warn('callGraph.limit', `must be 1 to ${MAX_CALL_LIMIT}; using ${limit.value}`);
  const refresh = intIn(cfg.get<unknown>('statusBar.refreshSeconds'), 5, 1, 600);
  if (!refresh.ok) warn('statusBar.refreshSeconds', `must be 1 to 600; using ${refresh.value}`);

  return {
    settings: {
      pythonPath,
      serverCommand,
      serverEnv,
      initializationOptions,
      budgets,
      callGraphDepth: depth.value,
      callGraphLimit: limit.value,
      refreshSeconds: refresh.value,
    },
    warnings,
  };
}

export function currentSettings(): { settings: Settings; warnings: SettingsWarning[] } {
  return readSettings(vscode.workspace.getConfiguration(SECTION));
}

export function needsRestart(event: vscode.ConfigurationChangeEvent): boolean {
  return RESTART_SETTINGS.some((key) => event.affectsConfiguration(key));
}
