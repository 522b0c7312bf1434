import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MAX_DIFF_BYTES } from './protocol';

/** The unsaved text of an open editor buffer, by path relative to the repository folder. */
export interface Overlay {
  path: string;
  text: string;
}

export type DiffResult =
  | { ok: true; diff: string; bytes: number; unsaved: number }
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

/** The committed (or, before the first commit, staged) text of `rel`; null for a file git does not track. */
async function baseText(cwd: string, rel: string, hasHead: boolean): Promise<string | null> {
  const r = await git(cwd, ['show', `${hasHead ? 'HEAD' : ''}:./${rel}`]);
  return r.code === 0 ? r.stdout : null;
}

/**
 * The diff of an unsaved buffer against its committed text, with the paths git would print
 * (`a/<rel>` / `b/<rel>`): both texts go to a temporary folder and `git diff --no-index`
 * compares them.
 */
async function overlayDiff(overlay: Overlay, prefix: string, base: string, tmp: string): Promise<string> {
  const rel = prefix + overlay.path.split(path.sep).join('/');
  const a = path.join(tmp, 'a', rel);
  const b = path.join(tmp, 'b', rel);
  fs.mkdirSync(path.dirname(a), { recursive: true });
  fs.mkdirSync(path.dirname(b), { recursive: true });
  fs.writeFileSync(a, base);
  fs.writeFileSync(b, overlay.text);
  // exit 1 means "the files differ"
  const r = await git(tmp, ['diff', '--no-index', '--no-color', '--no-ext-diff', '--unified=3', '--no-prefix', '--', `a/${rel}`, `b/${rel}`]);
  return r.code === 0 || r.code === 1 ? r.stdout : '';
}

/**
 * The uncommitted changes of the repository at `cwd` (staged and unstaged, against HEAD; for
 * a repository without commits, against the empty tree), as a unified diff no larger than the
 * server accepts. `overlays` are unsaved editor buffers: for those files the buffer's text is
 * compared instead of the file on disk, so the diff is what the user sees in the editor.
 */
export async function currentDiff(cwd: string, maxBytes = MAX_DIFF_BYTES, overlays: readonly Overlay[] = []): Promise<DiffResult> {
  const inside = await git(cwd, ['rev-parse', '--is-inside-work-tree']);
  if (inside.spawnError) return { ok: false, reason: 'git-missing', message: 'git is not installed or not on PATH.' };
  if (inside.code !== 0 || inside.stdout.trim() !== 'true') {
    return { ok: false, reason: 'not-a-repo', message: `${cwd} is not inside a git repository.` };
  }
  const base = ['diff', '--no-color', '--no-ext-diff', '--unified=3'];
  const hasHead = (await git(cwd, ['rev-parse', '--verify', '--quiet', 'HEAD'])).code === 0;
  // unsaved buffers of tracked files replace their file on disk
  const tracked: { overlay: Overlay; base: string }[] = [];
  for (const overlay of overlays) {
    const text = await baseText(cwd, overlay.path, hasHead);
    if (text !== null) tracked.push({ overlay, base: text });
  }
  const exclude = tracked.map((t) => `:(exclude)${t.overlay.path.split(path.sep).join('/')}`);
  const spec = exclude.length > 0 ? ['--', '.', ...exclude] : [];
  const result = hasHead ? await git(cwd, [...base, 'HEAD', ...spec]) : await git(cwd, [...base, '--cached', ...spec]);
  if (result.code !== 0) {
    return { ok: false, reason: 'error', message: `git diff failed: ${result.stderr.trim() || `exit ${result.code}`}` };
  }
  let diff = result.stdout;
  if (!hasHead) {
    const unstaged = await git(cwd, [...base, ...spec]);
    if (unstaged.code === 0) diff += unstaged.stdout;
  }
  let unsaved = 0;
  if (tracked.length > 0) {
    // diff paths are relative to the top of the repository, the folder may be below it
    const prefix = (await git(cwd, ['rev-parse', '--show-prefix'])).stdout.trim();
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'codesynapse-diff-'));
    try {
      for (const t of tracked) {
        const d = await overlayDiff(t.overlay, prefix, t.base, tmp);
        if (d) {
          diff += d;
          unsaved += 1;
        }
      }
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
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
  return { ok: true, diff, bytes, unsaved };
}
