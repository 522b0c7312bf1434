import { execFile } from 'node:child_process';
import { MAX_DIFF_BYTES } from './protocol';

export type DiffResult =
  | { ok: true; diff: string; bytes: number }
  | { ok: false; reason: 'not-a-repo' | 'git-missing' | 'too-large' | 'empty' | 'error'; message: string };

function git(cwd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string; spawnError?: NodeJS.ErrnoException }> {
  return new Promise((resolve) => {
    execFile(
      'git',
      args,
      { cwd, maxBuffer: MAX_DIFF_BYTES * 2, windowsHide: true, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (error && (error as NodeJS.ErrnoException).code === 'ENOENT') {
          resolve({ code: -1, stdout: '', stderr: '', spawnError: error as NodeJS.ErrnoException });
          return;
        }
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/**
 * The uncommitted changes of the repository at `cwd` (staged and unstaged, against HEAD; for
 * a repository without commits, against the empty tree), as a unified diff no larger than the
 * server accepts.
 */
export async function currentDiff(cwd: string, maxBytes = MAX_DIFF_BYTES): Promise<DiffResult> {
  const inside = await git(cwd, ['rev-parse', '--is-inside-work-tree']);
  if (inside.spawnError) return { ok: false, reason: 'git-missing', message: 'git is not installed or not on PATH.' };
  if (inside.code !== 0 || inside.stdout.trim() !== 'true') {
    return { ok: false, reason: 'not-a-repo', message: `${cwd} is not inside a git repository.` };
  }
  const base = ['diff', '--no-color', '--no-ext-diff', '--unified=3'];
  const hasHead = (await git(cwd, ['rev-parse', '--verify', '--quiet', 'HEAD'])).code === 0;
  const result = hasHead ? await git(cwd, [...base, 'HEAD']) : await git(cwd, [...base, '--cached']);
  if (result.code !== 0) {
    return { ok: false, reason: 'error', message: `git diff failed: ${result.stderr.trim() || `exit ${result.code}`}` };
  }
  let diff = result.stdout;
  if (!hasHead) {
    const unstaged = await git(cwd, base);
    if (unstaged.code === 0) diff += unstaged.stdout;
  }
  const bytes = Buffer.byteLength(diff, 'utf8');
  if (bytes === 0) return { ok: false, reason: 'empty', message: 'There are no uncommitted changes.' };
  if (bytes > maxBytes) {
    return {
      ok: false,
      reason: 'too-large',
      message: `The current diff is ${bytes.toLocaleString('en-US')} bytes; the server accepts at most ${maxBytes.toLocaleString('en-US')}. Commit part of it or ask for base/head revisions instead.`,
    };
  }
  return { ok: true, diff, bytes };
}
