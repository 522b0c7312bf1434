import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { preflight, preflightMessage, resolveServerCommand, spawnFailureMessage } from '../../src/serverCommand';

describe('resolveServerCommand', () => {
  const none = (): boolean => false;

  it('prefers a full serverCommand override', () => {
    expect(resolveServerCommand({ serverCommand: ['codesynapse', 'serve'], pythonPath: '/opt/py', workspaceFolders: ['/ws'] }, none)).toEqual({
      command: 'codesynapse',
      args: ['serve'],
      python: null,
      source: 'serverCommand',
    });
  });

  it('uses pythonPath, resolving a relative path against the first folder', () => {
    expect(resolveServerCommand({ serverCommand: [], pythonPath: 'env/bin/python', workspaceFolders: ['/ws'] }, none, 'linux')).toEqual({
      command: '/ws/env/bin/python',
      args: ['-m', 'codesynapse', 'serve'],
      python: '/ws/env/bin/python',
      source: 'pythonPath',
    });
    expect(resolveServerCommand({ serverCommand: [], pythonPath: 'python3.12', workspaceFolders: ['/ws'] }, none).command).toBe('python3.12');
  });

  it('finds the workspace .venv, else falls back to python3', () => {
    const venv = (p: string): boolean => p === '/second/.venv/bin/python';
    expect(resolveServerCommand({ serverCommand: [], pythonPath: '', workspaceFolders: ['/first', '/second'] }, venv, 'linux')).toEqual({
      command: '/second/.venv/bin/python',
      args: ['-m', 'codesynapse', 'serve'],
      python: '/second/.venv/bin/python',
      source: 'workspaceVenv',
    });
    expect(resolveServerCommand({ serverCommand: [], pythonPath: '', workspaceFolders: ['/first'] }, none, 'linux')).toEqual({
      command: 'python3',
      args: ['-m', 'codesynapse', 'serve'],
      python: 'python3',
      source: 'default',
    });
  });
});

describe('preflight with real interpreters', () => {
  let tmp: string;
  let bareVenvPython: string;
  let withPackage: string;

  beforeAll(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cs-preflight-'));
    // A fresh venv without the package, like a user's project venv.
    execFileSync('python3', ['-m', 'venv', '--without-pip', path.join(tmp, 'venv')]);
    bareVenvPython = path.join(tmp, 'venv', 'bin', 'python');
    // A directory that provides an importable `codesynapse` package.
    withPackage = path.join(tmp, 'site');
    fs.mkdirSync(path.join(withPackage, 'codesynapse'), { recursive: true });
    fs.writeFileSync(path.join(withPackage, 'codesynapse', '__init__.py'), '');
  }, 60_000);

  afterAll(() => {
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('reports a missing interpreter', async () => {
    const missing = path.join(tmp, 'no-such-python');
    expect(await preflight(missing, process.env, tmp)).toEqual({ ok: false, reason: 'python-missing', detail: `${missing}: ENOENT` });
  });

  it('reports a missing package with the install command as the fix', async () => {
    const env = { ...process.env, PYTHONPATH: '' };
    const result = await preflight(bareVenvPython, env, tmp);
    expect(result).toEqual({ ok: false, reason: 'package-missing', detail: "ModuleNotFoundError: No module named 'codesynapse'" });
    if (result.ok) return;
    const cmd = { command: bareVenvPython, args: ['-m', 'codesynapse', 'serve'], python: bareVenvPython, source: 'pythonPath' as const };
    expect(preflightMessage(result, cmd)).toBe(
      `The codesynapse package is not installed for "${bareVenvPython}". Install it with: ${bareVenvPython} -m pip install codesynapse — or point "codesynapse.pythonPath" at an interpreter that has it.`,
    );
  });

  it('passes when the package imports', async () => {
    const result = await preflight(bareVenvPython, { ...process.env, PYTHONPATH: withPackage }, tmp);
    expect(result.ok).toBe(true);
  });

  it('explains a failed spawn of a serverCommand override', () => {
    const cmd = { command: 'codesynapse-missing', args: ['serve'], python: null, source: 'serverCommand' as const };
    const err = Object.assign(new Error('spawn codesynapse-missing ENOENT'), { code: 'ENOENT' });
    expect(spawnFailureMessage(cmd, err)).toBe(
      'CodeSynapse could not find "codesynapse-missing" (from codesynapse.serverCommand). Fix the setting or install the package so that the command is on PATH.',
    );
  });
});
