import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

/** How the server process is started. */
export interface ServerCommand {
  command: string;
  args: string[];
  /** The interpreter when the command is `<python> -m codesynapse serve`; null for a full override. */
  python: string | null;
  /** Where the choice came from, for the log and for error messages. */
  source: 'serverCommand' | 'pythonPath' | 'workspaceVenv' | 'default';
}

export const DEFAULT_PYTHON = 'python3';

/** Interpreter paths of a workspace virtual environment, in the order they are tried. */
export function venvPythonCandidates(folder: string, platform: NodeJS.Platform = process.platform): string[] {
  if (platform === 'win32') return [path.join(folder, '.venv', 'Scripts', 'python.exe')];
  return [path.join(folder, '.venv', 'bin', 'python')];
}

/**
 * Choose the server command: a full `serverCommand` override wins; then `pythonPath`
 * (a relative path is taken from the first workspace folder); then the workspace's
 * `.venv` interpreter if it exists; then `python3` from PATH.
 */
export function resolveServerCommand(
  opts: { serverCommand: string[]; pythonPath: string; workspaceFolders: string[] },
  exists: (p: string) => boolean = fs.existsSync,
  platform: NodeJS.Platform = process.platform,
): ServerCommand {
  if (opts.serverCommand.length > 0) {
    const [command, ...args] = opts.serverCommand;
    return { command: command as string, args, python: null, source: 'serverCommand' };
  }
  const serve = ['-m', 'codesynapse', 'serve'];
  if (opts.pythonPath) {
    let python = opts.pythonPath;
    const looksRelative = !path.isAbsolute(python) && (python.includes('/') || python.includes('\\'));
    if (looksRelative && opts.workspaceFolders.length > 0) {
      python = path.join(opts.workspaceFolders[0] as string, python);
    }
    return { command: python, args: serve, python, source: 'pythonPath' };
  }
  for (const folder of opts.workspaceFolders) {
    for (const candidate of venvPythonCandidates(folder, platform)) {
      if (exists(candidate)) return { command: candidate, args: serve, python: candidate, source: 'workspaceVenv' };
    }
  }
  return { command: DEFAULT_PYTHON, args: serve, python: DEFAULT_PYTHON, source: 'default' };
}

export type PreflightResult =
  | { ok: true; version: string | null }
  | { ok: false; reason: 'python-missing' | 'package-missing' | 'python-error' | 'not-python' | 'python-too-old'; detail: string };

/** Printed by the preflight script first: what ran it is a Python, and which. */
const SENTINEL = 'codesynapse-preflight';

/** Lowest Python the server supports (pyproject.toml requires-python). */
export const MIN_PYTHON: readonly [number, number] = [3, 11];

/**
 * Check that the interpreter is a Python 3.11+ and can import `codesynapse`, before the
 * language client starts it; a missing interpreter, a program that is not Python, an old
 * Python or a missing package becomes a message with a fix instead of a server that dies on
 * start. Only meaningful when the command is `<python> -m codesynapse`.
 */
export function preflight(
  python: string,
  env: NodeJS.ProcessEnv,
  cwd: string | undefined,
  timeoutMs = 15_000,
): Promise<PreflightResult> {
  const script =
    'import sys\n' +
    `print("${SENTINEL}", "%d.%d.%d" % sys.version_info[:3], flush=True)\n` +
    `if sys.version_info < (${MIN_PYTHON[0]}, ${MIN_PYTHON[1]}): sys.exit(3)\n` +
    'import importlib.metadata as m\n' +
    'import codesynapse\n' +
    'try:\n    print(m.version("codesynapse"))\nexcept Exception:\n    print("")\n';
  return new Promise((resolve) => {
    execFile(python, ['-c', script], { env, cwd, timeout: timeoutMs, windowsHide: true }, (error, stdout, stderr) => {
      const err = error as (Omit<NodeJS.ErrnoException, 'code'> & { code?: string | number }) | null;
      if (err && (err.code === 'ENOENT' || err.code === 'EACCES' || err.code === 'ENOTDIR')) {
        resolve({ ok: false, reason: 'python-missing', detail: `${python}: ${err.code}` });
        return;
      }
      const lines = stdout.split(/\r?\n/);
      const head = lines[0]?.split(' ') ?? [];
      // anything that does not print the sentinel did not run our Python code
      if (head[0] !== SENTINEL) {
        const said = lastLine(stderr || stdout || (err ? err.message : ''));
        resolve({ ok: false, reason: 'not-python', detail: said ? said.slice(0, 200) : 'no output' });
        return;
      }
      const pythonVersion = head[1] ?? '?';
      if (err && err.code === 3) {
        resolve({ ok: false, reason: 'python-too-old', detail: pythonVersion });
        return;
      }
      if (!err) {
        const version = (lines[1] ?? '').trim();
        resolve({ ok: true, version: version || null });
        return;
      }
      const text = stderr || err.message;
      if (/ModuleNotFoundError|No module named/.test(text) && /codesynapse/.test(text)) {
        resolve({ ok: false, reason: 'package-missing', detail: lastLine(text) });
        return;
      }
      resolve({ ok: false, reason: 'python-error', detail: lastLine(text) });
    });
  });
}

function lastLine(text: string): string {
  const lines = text.trim().split(/\r?\n/);
  return lines[lines.length - 1] ?? text;
}

/** The message and the fix shown to the user when the preflight fails. */
export function preflightMessage(result: Exclude<PreflightResult, { ok: true }>, cmd: ServerCommand): string {
  const python = cmd.python ?? cmd.command;
  switch (result.reason) {
    case 'python-missing':
      return (
        `CodeSynapse could not run the Python interpreter "${python}" (${sourceLabel(cmd)}): ` +
        `${result.detail.endsWith('EACCES') ? 'it is a folder or not executable' : 'there is no such program'}. Select a Python ${MIN_PYTHON.join('.')}+ interpreter.`
      );
    case 'not-python':
      return (
        // what the program printed goes to the log (the detail), not into the toast: it is noise
        `"${python}" (${sourceLabel(cmd)}) is not a Python interpreter: it did not run Python code. ` +
        `Select a Python ${MIN_PYTHON.join('.')}+ interpreter.`
      );
    case 'python-too-old':
      return `"${python}" is Python ${result.detail}; the CodeSynapse server needs Python ${MIN_PYTHON.join('.')} or newer. Select a newer interpreter.`;
    case 'package-missing':
      return (
        `The codesynapse package is not installed for "${python}". ` +
        'Click "Install Server" to install the server that ships with this extension into it, or "Select Interpreter" to pick one that has it.'
      );
    case 'python-error':
      return `CodeSynapse could not import its server with "${python}": ${result.detail}. See the CodeSynapse log.`;
  }
}

/**
 * The command that installs the server into `python`: the wheel bundled with the extension
 * (built from this repository when the extension is packaged, so it works without the package
 * being published), else the CodeSynapse repository checkout the user names.
 */
export function installCommand(python: string, wheel: string): string {
  return [python, '-m', 'pip', 'install', wheel].map(shellQuote).join(' ');
}

export function installArgs(wheel: string): string[] {
  return ['-m', 'pip', 'install', wheel];
}

function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The server wheel packaged inside the extension (dist/server/codesynapse-*.whl), newest version first. */
export function bundledWheel(extensionPath: string, readdir: (p: string) => string[] = (p) => fs.readdirSync(p)): string | null {
  const dir = path.join(extensionPath, 'dist', 'server');
  let names: string[];
  try {
    names = readdir(dir);
  } catch {
    return null;
  }
  const wheels = names.filter((n) => /^codesynapse-.+\.whl$/.test(n)).sort().reverse();
  return wheels.length > 0 ? path.join(dir, wheels[0] as string) : null;
}

/** What a failed `pip install` printed, cut to what a person reads in a toast. */
export function pipFailureMessage(python: string, output: string): string {
  const lines = output.trim().split(/\r?\n/).filter((l) => l.trim());
  if (/No module named pip/.test(output)) {
    return `"${python}" has no pip, so the server cannot be installed into it. Select an interpreter with pip (or run "${python} -m ensurepip").`;
  }
  const error = lines.filter((l) => /error/i.test(l)).slice(-2).join(' ') || lines.slice(-2).join(' ');
  return `Installing the server into "${python}" failed: ${error || 'pip exited with an error'}. See the CodeSynapse log.`;
}

function sourceLabel(cmd: ServerCommand): string {
  switch (cmd.source) {
    case 'pythonPath':
      return 'from codesynapse.pythonPath';
    case 'workspaceVenv':
      return 'the workspace .venv';
    case 'serverCommand':
      return 'from codesynapse.serverCommand';
    case 'default':
      return 'the default; no .venv found';
  }
}

/** Describe a failure to spawn a full `serverCommand` override. */
export function spawnFailureMessage(cmd: ServerCommand, error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOENT') {
    return `CodeSynapse could not find "${cmd.command}" (${sourceLabel(cmd)}). Fix the setting or install the package so that the command is on PATH.`;
  }
  const text = error instanceof Error ? error.message : String(error);
  return `CodeSynapse server failed to start: ${text}. See the CodeSynapse log.`;
}
