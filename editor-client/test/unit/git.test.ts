import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { currentDiff } from '../../src/git';

const dirs: string[] = [];
function repo(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cs-git-'));
  dirs.push(dir);
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'pipe' });
  git('init', '-q', '-b', 'main');
  git('config', 'user.email', 't@example.invalid');
  git('config', 'user.name', 'T');
  git('config', 'commit.gpgsign', 'false');
  return dir;
}
function git(dir: string, ...args: string[]): void {
  execFileSync('git', args, { cwd: dir, stdio: 'pipe' });
}

afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe('currentDiff (real git)', () => {
  it('says when the folder is not a repository', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cs-nogit-'));
    dirs.push(dir);
    expect(await currentDiff(dir)).toEqual({ ok: false, reason: 'not-a-repo', message: `${dir} is not inside a git repository.` });
  });

  it('says when there is nothing to diff', async () => {
    const dir = repo();
    fs.writeFileSync(path.join(dir, 'a.py'), 'x = 1\n');
    git(dir, 'add', 'a.py');
    git(dir, 'commit', '-qm', 'init');
    expect(await currentDiff(dir)).toEqual({ ok: false, reason: 'empty', message: 'There are no uncommitted changes.' });
  });

  it('returns staged and unstaged changes against HEAD', async () => {
    const dir = repo();
    fs.writeFileSync(path.join(dir, 'a.py'), 'x = 1\n');
    fs.writeFileSync(path.join(dir, 'b.py'), 'y = 1\n');
    git(dir, 'add', '.');
    git(dir, 'commit', '-qm', 'init');
    fs.writeFileSync(path.join(dir, 'a.py'), 'x = 2\n');
    fs.writeFileSync(path.join(dir, 'b.py'), 'y = 2\n');
    git(dir, 'add', 'b.py');
    const d = await currentDiff(dir);
    expect(d.ok).toBe(true);
    if (!d.ok) return;
    expect(d.diff.match(/^diff --git .*$/gm)).toEqual(['diff --git a/a.py b/a.py', 'diff --git a/b.py b/b.py']);
    expect(d.diff).toContain('-x = 1\n+x = 2\n');
    expect(d.bytes).toBe(Buffer.byteLength(d.diff));
  });

  it('works before the first commit and refuses diffs over the cap', async () => {
    const dir = repo();
    fs.writeFileSync(path.join(dir, 'new.py'), 'def f():\n    return 1\n');
    git(dir, 'add', 'new.py');
    const d = await currentDiff(dir);
    expect(d.ok && d.diff.startsWith('diff --git a/new.py b/new.py\nnew file mode 100644')).toBe(true);
    const small = await currentDiff(dir, 10);
    expect(small.ok).toBe(false);
    if (!small.ok) expect(small.reason).toBe('too-large');
  });

  it('diffs unsaved buffers instead of their files on disk, with the paths git prints', async () => {
    const dir = repo();
    fs.mkdirSync(path.join(dir, 'shop'));
    fs.writeFileSync(path.join(dir, 'shop', 'cart.py'), 'def total():\n    return 1\n');
    fs.writeFileSync(path.join(dir, 'b.py'), 'y = 1\n');
    git(dir, 'add', '.');
    git(dir, 'commit', '-qm', 'init');
    fs.writeFileSync(path.join(dir, 'b.py'), 'y = 2\n'); // saved change
    // cart.py is unchanged on disk; its editor buffer is edited and not saved
    const overlay = { path: 'shop/cart.py', text: 'def total():\n    return 2\n' };
    const d = await currentDiff(dir, undefined, [overlay, { path: 'untracked.py', text: 'z = 1\n' }]);
    expect(d.ok).toBe(true);
    if (!d.ok) return;
    expect(d.unsaved).toBe(1);
    expect(d.diff.match(/^(diff --git|---|\+\+\+) .*$/gm)).toEqual([
      'diff --git a/b.py b/b.py',
      '--- a/b.py',
      '+++ b/b.py',
      'diff --git a/shop/cart.py b/shop/cart.py',
      '--- a/shop/cart.py',
      '+++ b/shop/cart.py',
    ]);
    expect(d.diff).toContain('@@ -1,2 +1,2 @@\n def total():\n-    return 1\n+    return 2\n');
    // a saved file whose buffer is also dirty is diffed once, from the buffer
    fs.writeFileSync(path.join(dir, 'shop', 'cart.py'), 'def total():\n    return 3\n');
    const again = await currentDiff(dir, undefined, [overlay]);
    expect(again.ok && again.diff.match(/^diff --git .*$/gm)).toEqual(['diff --git a/b.py b/b.py', 'diff --git a/shop/cart.py b/shop/cart.py']);
    expect(again.ok && again.diff.includes('+    return 2')).toBe(true);
    expect(again.ok && again.diff.includes('return 3')).toBe(false);
  });

  it('finds an unsaved edit when nothing is changed on disk', async () => {
    const dir = repo();
    fs.writeFileSync(path.join(dir, 'a.py'), 'x = 1\n');
    git(dir, 'add', '.');
    git(dir, 'commit', '-qm', 'init');
    expect((await currentDiff(dir)).ok).toBe(false);
    const d = await currentDiff(dir, undefined, [{ path: 'a.py', text: 'x = 1  # edited\n' }]);
    const blob = (text: string): string => execFileSync('git', ['hash-object', '--stdin'], { input: text, encoding: 'utf8' }).trim().slice(0, 7);
    expect(d.ok && d.diff).toBe(
      `diff --git a/a.py b/a.py\nindex ${blob('x = 1\n')}..${blob('x = 1  # edited\n')} 100644\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 1  # edited\n`,
    );
  });
});
