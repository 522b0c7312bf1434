/**
 * Choosing the interpreter that runs the server, and installing the bundled server into it.
 *
 * The picker writes `codesynapse.pythonPath` itself (as Pylance's "Select Interpreter" does),
 * so it works in remote windows (code-server, SSH, WSL, dev containers) where the Settings
 * editor's User tab does not show machine-scoped settings.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { DEFAULT_PYTHON, bundledWheel, installArgs, pipFailureMessage, venvPythonCandidates } from './serverCommand';

export interface InterpreterChoice {
  label: string;
  description: string;
  path: string;
}

/** The Python extension's environments API, when that extension is installed. */
interface PythonEnvironmentsApi {
  environments?: {
    getActiveEnvironmentPath?(resource?: vscode.Uri): { path: string } | undefined;
    known?: readonly { path: string }[];
  };
}

async function pythonExtensionInterpreters(): Promise<InterpreterChoice[]> {
  const ext = vscode.extensions.getExtension<PythonEnvironmentsApi>('ms-python.python');
  if (!ext) return [];
  try {
    const api = ext.isActive ? ext.exports : await ext.activate();
    const envs = api?.environments;
    if (!envs) return [];
    const out: InterpreterChoice[] = [];
    const active = envs.getActiveEnvironmentPath?.(vscode.workspace.workspaceFolders?.[0]?.uri)?.path;
    if (active) out.push({ label: path.basename(path.dirname(path.dirname(active))) || active, description: `${active} · selected in the Python extension`, path: active });
    for (const e of envs.known ?? []) {
      if (e.path && e.path !== active) out.push({ label: path.basename(path.dirname(path.dirname(e.path))) || e.path, description: `${e.path} · Python extension`, path: e.path });
    }
    return out;
  } catch {
    return [];
  }
}

/**
 * Interpreters to offer, most likely first: the current setting, the workspace .venv of each
 * folder, the Python extension's environments, then `python3` on PATH. No duplicates.
 */
export function interpreterChoices(
  opts: { current: string; workspaceFolders: string[]; fromPythonExtension: InterpreterChoice[] },
  exists: (p: string) => boolean = fs.existsSync,
): InterpreterChoice[] {
  const out: InterpreterChoice[] = [];
  const seen = new Set<string>();
  const add = (c: InterpreterChoice): void => {
    if (seen.has(c.path)) return;
    seen.add(c.path);
    out.push(c);
  };
  if (opts.current) add({ label: path.basename(opts.current), description: `${opts.current} · current setting`, path: opts.current });
  for (const folder of opts.workspaceFolders) {
    for (const candidate of venvPythonCandidates(folder)) {
      if (exists(candidate)) add({ label: `.venv (${path.basename(folder)})`, description: `${candidate} · workspace virtual environment`, path: candidate });
    }
  }
  for (const c of opts.fromPythonExtension) add(c);
  add({ label: DEFAULT_PYTHON, description: 'python3 on PATH', path: DEFAULT_PYTHON });
  return out;
}

export const ENTER_PATH = 'Enter interpreter path…';

/** Quick pick of interpreters; writes `codesynapse.pythonPath` (user/remote settings). Returns the path chosen. */
export async function selectInterpreter(): Promise<string | undefined> {
  const cfg = vscode.workspace.getConfiguration('codesynapse');
  const current = (cfg.get<string>('pythonPath') ?? '').trim();
  const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  const choices = interpreterChoices({ current, workspaceFolders: folders, fromPythonExtension: await pythonExtensionInterpreters() });
  const items: (vscode.QuickPickItem & { path?: string })[] = [
    { label: `$(add) ${ENTER_PATH}`, alwaysShow: true },
    ...choices.map((c) => ({ label: c.label, description: c.description, path: c.path })),
  ];
  const picked = await vscode.window.showQuickPick(items, {
    title: 'CodeSynapse: select the Python interpreter that runs the server',
    placeHolder: current ? `Current: ${current}` : 'The interpreter needs Python 3.11+ and the codesynapse package',
    ignoreFocusOut: true,
  });
  if (!picked) return undefined;
  let chosen = picked.path;
  if (!chosen) {
    const typed = await vscode.window.showInputBox({
      title: 'CodeSynapse: interpreter path',
      prompt: 'Path of a Python 3.11+ interpreter (absolute, or relative to the workspace folder)',
      value: current,
      ignoreFocusOut: true,
    });
    chosen = typed?.trim();
  }
  if (!chosen) return undefined;
  await cfg.update('pythonPath', chosen, vscode.ConfigurationTarget.Global);
  return chosen;
}

/** Run `python -m pip install <bundled wheel>` with a progress notification. */
export async function installServer(
  python: string,
  extensionPath: string,
  log: vscode.LogOutputChannel,
): Promise<boolean> {
  const wheel = bundledWheel(extensionPath);
  if (!wheel) {
    void vscode.window.showErrorMessage(
      'This build of the extension carries no server wheel. In the CodeSynapse repository run "pip install -e ." with the interpreter, or select one that has the package.',
    );
    return false;
  }
  log.info(`installing the server: ${python} ${installArgs(wheel).join(' ')}`);
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `CodeSynapse: installing the server into ${python}`, cancellable: false },
    () =>
      new Promise<{ ok: boolean; output: string }>((resolve) => {
        execFile(python, installArgs(wheel), { timeout: 10 * 60_000, maxBuffer: 16 * 1024 * 1024, windowsHide: true }, (error, stdout, stderr) => {
          resolve({ ok: !error, output: `${stdout}\n${stderr}` });
        });
      }),
  );
  log.info(result.output.trim());
  if (!result.ok) {
    const choice = await vscode.window.showErrorMessage(pipFailureMessage(python, result.output), 'Select Interpreter', 'Show Log');
    if (choice === 'Select Interpreter') await vscode.commands.executeCommand('codesynapse.selectInterpreter');
    else if (choice === 'Show Log') log.show();
    return false;
  }
  void vscode.window.showInformationMessage(`CodeSynapse: the server is installed into ${python}; starting it.`);
  return true;
}

export type FixAction = 'Install Server' | 'Select Interpreter' | 'Open Settings' | 'Show Log' | 'Restart Server';

/**
 * The buttons of a failed start's toast: a missing package is installed from the bundled
 * wheel; a missing or wrong interpreter is picked again; a failed `serverCommand` is edited.
 */
export function fixesFor(
  reason: 'python-missing' | 'package-missing' | 'python-error' | 'not-python' | 'python-too-old' | 'spawn' | 'crashed',
  python: string | null,
  haveWheel: boolean,
): { actions: FixAction[]; python: string | null } {
  if ((reason === 'spawn' || reason === 'crashed') && python === null) return { actions: ['Open Settings', 'Show Log'], python };
  if (reason === 'crashed') return { actions: ['Restart Server', 'Show Log', 'Select Interpreter'], python };
  if (reason === 'package-missing' && haveWheel) return { actions: ['Install Server', 'Select Interpreter', 'Show Log'], python };
  return { actions: ['Select Interpreter', 'Show Log'], python };
}

/**
 * Open the Settings editor on one setting. In a remote window (code-server, SSH, WSL, dev
 * containers) machine-scoped settings live under the Remote tab: open that one there.
 */
export async function openSettings(id: string): Promise<void> {
  if (vscode.env.remoteName) {
    // the Remote tab of the Settings editor, searched for the setting
    await vscode.commands.executeCommand('workbench.action.openRemoteSettings', { query: id });
  } else {
    await vscode.commands.executeCommand('workbench.action.openSettings', id);
  }
}
