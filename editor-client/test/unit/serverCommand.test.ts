import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundledWheel, installArgs, installCommand, pipFailureMessage, preflight, preflightMessage, resolveServerCommand, spawnFailureMessage } from '../../src/serverCommand';

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
    // No "pip install codesynapse": the package is not published; the fix is the bundled wheel.
    expect(preflightMessage(result, cmd)).toBe(
      `The codesynapse package is not installed for "${bareVenvPython}". Click "Install Server" to install the server that ships with this extension into it, or "Select Interpreter" to pick one that has it.`,
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

describe('installing the bundled server', () => {
  it('finds the wheel that packaging put in dist/server, and builds the pip command for it', () => {
    const ext = fs.mkdtempSync(path.join(os.tmpdir(), 'cs-ext-'));
    expect(bundledWheel(ext)).toBeNull();
    fs.mkdirSync(path.join(ext, 'dist', 'server'), { recursive: true });
    fs.writeFileSync(path.join(ext, 'dist', 'server', 'README.txt'), '');
    expect(bundledWheel(ext)).toBeNull();
    const wheel = path.join(ext, 'dist', 'server', 'codesynapse-0.1.0-py3-none-any.whl');
    fs.writeFileSync(wheel, '');
    expect(bundledWheel(ext)).toBe(wheel);
    expect(installArgs(wheel)).toEqual(['-m', 'pip', 'install', wheel]);
    expect(installCommand('/home/a b/.venv/bin/python', '/x/codesynapse-0.1.0-py3-none-any.whl')).toBe(
      "'/home/a b/.venv/bin/python' -m pip install /x/codesynapse-0.1.0-py3-none-any.whl",
    );
    fs.rmSync(ext, { recursive: true, force: true });
  });

  it('explains a pip install into an interpreter without pip (a real venv made --without-pip)', () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cs-pip-'));
    execFileSync('python3', ['-m', 'venv', '--without-pip', path.join(tmp, 'venv')]);
    const py = path.join(tmp, 'venv', 'bin', 'python');
    let output = '';
    try {
      execFileSync(py, installArgs('/nonexistent/codesynapse-0.1.0-py3-none-any.whl'), { stdio: 'pipe', encoding: 'utf8' });
    } catch (error) {
      output = String((error as { stderr?: string }).stderr);
    }
    expect(pipFailureMessage(py, output)).toBe(
      `"${py}" has no pip, so the server cannot be installed into it. Select an interpreter with pip (or run "${py} -m ensurepip").`,
    );
    fs.rmSync(tmp, { recursive: true, force: true });
  }, 60_000);

  it('the packaging script builds the server wheel from this repository', () => {
    const script = fs.readFileSync(path.resolve(__dirname, '../../scripts/build-wheel.mjs'), 'utf8');
    expect(script).toContain("'pip', 'wheel'");
    const pkg = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts['vscode:prepublish']).toContain('scripts/build-wheel.mjs');
    expect(fs.readFileSync(path.resolve(__dirname, '../../.vscodeignore'), 'utf8')).toContain('!dist/server/*.whl');
  });
});

describe('preflight of programs that are not a usable Python', () => {
  const cmd = (python: string) => ({ command: python, args: ['-m', 'codesynapse', 'serve'], python, source: 'pythonPath' as const });

  it('says a program that does not run Python code is not a Python interpreter (real /bin/ls and /bin/true)', async () => {
    const ls = await preflight('/bin/ls', process.env, os.tmpdir());
    expect(ls.ok).toBe(false);
    if (ls.ok) return;
    expect(ls.reason).toBe('not-python');
    // what ls printed (our script, quoted back) stays out of the toast; it is in the detail for the log
    expect(preflightMessage(ls, cmd('/bin/ls'))).toBe(
      '"/bin/ls" (from codesynapse.pythonPath) is not a Python interpreter: it did not run Python code. Select a Python 3.11+ interpreter.',
    );
    expect(ls.detail).toMatch(/^\/bin\/ls: cannot access/);
    // exits 0 without running anything: before, this passed and the server "started"
    const t = await preflight('/bin/true', process.env, os.tmpdir());
    expect(t).toEqual({ ok: false, reason: 'not-python', detail: 'no output' });
    expect(preflightMessage(t as Exclude<typeof t, { ok: true }>, cmd('/bin/true'))).toBe(
      '"/bin/true" (from codesynapse.pythonPath) is not a Python interpreter: it did not run Python code. Select a Python 3.11+ interpreter.',
    );
  });

  it('says a folder is not an interpreter', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cs-dir-'));
    const r = await preflight(dir, process.env, os.tmpdir());
    expect(r).toEqual({ ok: false, reason: 'python-missing', detail: `${dir}: EACCES` });
    expect(preflightMessage(r as Exclude<typeof r, { ok: true }>, cmd(dir))).toBe(
      `CodeSynapse could not run the Python interpreter "${dir}" (from codesynapse.pythonPath): it is a folder or not executable. Select a Python 3.11+ interpreter.`,
    );
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

