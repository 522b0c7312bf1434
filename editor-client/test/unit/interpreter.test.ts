import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as vscode from './vscode.mock';
import { ENTER_PATH, fixesFor, interpreterChoices, openSettings, selectInterpreter } from '../../src/interpreter';

beforeEach(() => vscode.resetMock());
afterEach(() => vscode.resetMock());

describe('interpreter picker', () => {
  it('offers the current setting, each workspace .venv, the Python extension, then python3, without duplicates', () => {
    const exists = (p: string): boolean => p === '/ws/.venv/bin/python';
    const choices = interpreterChoices(
      {
        current: '/opt/py/bin/python',
        workspaceFolders: ['/ws', '/other'],
        fromPythonExtension: [
          { label: 'ws', description: 'x', path: '/ws/.venv/bin/python' },
          { label: 'conda', description: 'y', path: '/conda/bin/python' },
        ],
      },
      exists,
    );
    expect(choices.map((c) => c.path)).toEqual(['/opt/py/bin/python', '/ws/.venv/bin/python', '/conda/bin/python', 'python3']);
    expect(choices[1]?.description).toBe('/ws/.venv/bin/python · workspace virtual environment');
  });

  it('writes the picked interpreter to codesynapse.pythonPath itself (no Settings editor: works in remote windows)', async () => {
    vscode.installedExtensions.set('ms-python.python', {
      isActive: true,
      exports: { environments: { getActiveEnvironmentPath: () => ({ path: '/envs/app/bin/python' }), known: [{ path: '/envs/app/bin/python' }] } },
      activate: () => Promise.resolve(undefined),
    });
    vscode.answers.quickPick.push((items) => (items as { path?: string }[]).find((i) => i.path === '/envs/app/bin/python'));
    expect(await selectInterpreter()).toBe('/envs/app/bin/python');
    expect(vscode.configUpdates).toEqual([['codesynapse.pythonPath', '/envs/app/bin/python', vscode.ConfigurationTarget.Global]]);
    const labels = (vscode.shownQuickPicks[0]?.items as { label: string; description?: string }[]).map((i) => `${i.label} | ${i.description ?? ''}`);
    expect(labels).toEqual([`$(add) ${ENTER_PATH} | `, 'app | /envs/app/bin/python · selected in the Python extension', 'python3 | python3 on PATH']);
  });

  it('takes a typed path from "Enter interpreter path…"', async () => {
    vscode.answers.quickPick.push((items) => (items as { label: string }[])[0]);
    vscode.answers.inputBox.push('  /usr/local/bin/python3.12 ');
    expect(await selectInterpreter()).toBe('/usr/local/bin/python3.12');
    expect(vscode.configUpdates[0]?.[1]).toBe('/usr/local/bin/python3.12');
  });
});

describe('the toast of a failed start', () => {
  it('offers Install Server for a missing package when the extension carries the wheel', () => {
    expect(fixesFor('package-missing', '/v/bin/python', true).actions).toEqual(['Install Server', 'Select Interpreter', 'Show Log']);
    expect(fixesFor('package-missing', '/v/bin/python', false).actions).toEqual(['Select Interpreter', 'Show Log']);
    expect(fixesFor('python-missing', '/nope', true).actions).toEqual(['Select Interpreter', 'Show Log']);
    expect(fixesFor('spawn', null, false).actions).toEqual(['Open Settings', 'Show Log']);
  });

  it('opens the Remote settings in a remote window, where machine-scoped settings live', async () => {
    vscode.env.remoteName = 'ssh-remote';
    await openSettings('codesynapse.serverCommand');
    expect(vscode.executedCommands).toEqual([{ command: 'workbench.action.openRemoteSettings', args: [{ query: 'codesynapse.serverCommand' }] }]);
    vscode.executedCommands.length = 0;
    vscode.env.remoteName = undefined;
    await openSettings('codesynapse.serverCommand');
    expect(vscode.executedCommands).toEqual([{ command: 'workbench.action.openSettings', args: ['codesynapse.serverCommand'] }]);
  });
});
