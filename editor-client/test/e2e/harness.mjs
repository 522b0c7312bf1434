// Harness for the end-to-end test: a real VS Code (code-server 4.100.3) with the packaged
// extension installed, driven by headless Debian Chromium through playwright-core.
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const CLIENT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const REPO_DIR = path.resolve(CLIENT_DIR, '..');
export const OUTPUT_DIR = path.resolve(process.env.CODESYNAPSE_E2E_OUTPUT ?? path.join(CLIENT_DIR, '.test-output', 'e2e'));

const CODE_SERVER_VERSION = '4.100.3';

/** Where ci.sh installs code-server; CODE_SERVER_BIN overrides. */
export function findCodeServer() {
  const candidates = [
    process.env.CODE_SERVER_BIN,
    path.join(CLIENT_DIR, '.e2e', `code-server-${CODE_SERVER_VERSION}`, 'node_modules', '.bin', 'code-server'),
    path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'codesynapse-e2e', `code-server-${CODE_SERVER_VERSION}`, 'node_modules', '.bin', 'code-server'),
  ].filter(Boolean);
  const found = candidates.find((p) => fs.existsSync(p));
  if (!found) {
    throw new Error(`code-server ${CODE_SERVER_VERSION} not found (looked in: ${candidates.join(', ')}). Run editor-client/scripts/ci.sh once, or set CODE_SERVER_BIN.`);
  }
  return found;
}

export function findPython() {
  const python = process.env.CODESYNAPSE_PYTHON ?? path.join(REPO_DIR, '.venv', 'bin', 'python');
  if (!fs.existsSync(python)) throw new Error(`Python not found at ${python}; set CODESYNAPSE_PYTHON.`);
  return python;
}

export function findVsix() {
  const vsix = process.env.CODESYNAPSE_VSIX ?? path.join(CLIENT_DIR, 'codesynapse.vsix');
  if (!fs.existsSync(vsix)) throw new Error(`${vsix} is missing; run "npm run package" first.`);
  return vsix;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Poll `fn` until it returns a truthy value or the time runs out. */
export async function waitFor(what, fn, { timeout = 30_000, interval = 250 } = {}) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeout} ms waiting for ${what}; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`);
    }
    await sleep(interval);
  }
}

export class CodeServer {
  constructor({ bin, root }) {
    this.bin = bin;
    this.root = root;
    this.userDataDir = path.join(root, 'user-data');
    this.extensionsDir = path.join(root, 'extensions');
    this.configFile = path.join(root, 'code-server.yaml');
    this.logFile = path.join(root, 'code-server.log');
    this.proc = null;
    this.port = 0;
    fs.mkdirSync(path.join(this.userDataDir, 'User'), { recursive: true });
    fs.mkdirSync(this.extensionsDir, { recursive: true });
    fs.writeFileSync(this.configFile, 'auth: none\ncert: false\n');
  }

  get settingsFile() {
    return path.join(this.userDataDir, 'User', 'settings.json');
  }

  writeSettings(settings) {
    const base = {
      'workbench.startupEditor': 'none',
      'workbench.tips.enabled': false,
      'workbench.enableExperiments': false,
      'security.workspace.trust.enabled': false,
      'telemetry.telemetryLevel': 'off',
      'update.mode': 'none',
      'extensions.autoCheckUpdates': false,
      'extensions.autoUpdate': false,
      'extensions.ignoreRecommendations': true,
      'git.enabled': false,
      'files.autoSave': 'off',
      'window.commandCenter': false,
      'workbench.colorTheme': 'Default Dark Modern',
      'editor.minimap.enabled': false,
      'chat.disableAIFeatures': true,
    };
    fs.writeFileSync(this.settingsFile, JSON.stringify({ ...base, ...settings }, null, 2));
  }

  /** Wait until VS Code has written `key: value` to the user or machine settings file. */
  async waitForSetting(key, value) {
    const files = [this.settingsFile, path.join(this.userDataDir, 'Machine', 'settings.json')];
    const want = `"${key}": ${JSON.stringify(value)}`;
    await waitFor(`${want} in the settings`, () =>
      files.some((f) => {
        try {
          return fs.readFileSync(f, 'utf8').includes(want);
        } catch {
          return false;
        }
      }),
    );
    await sleep(500); // the extension host hears of the change right after the write
  }

  installExtension(vsix) {
    const r = spawnSync(
      this.bin,
      ['--user-data-dir', this.userDataDir, '--extensions-dir', this.extensionsDir, '--config', this.configFile, '--install-extension', vsix, '--force'],
      { encoding: 'utf8', timeout: 120_000 },
    );
    const out = `${r.stdout}\n${r.stderr}`;
    if (r.status !== 0 || !/successfully installed/i.test(out)) {
      throw new Error(`installing ${vsix} failed (exit ${r.status}):\n${out}`);
    }
    return out.trim();
  }

  async start(folder) {
    this.port = await freePort();
    const log = fs.openSync(this.logFile, 'a');
    this.proc = spawn(
      this.bin,
      [
        '--bind-addr', `127.0.0.1:${this.port}`,
        '--auth', 'none',
        '--config', this.configFile,
        '--user-data-dir', this.userDataDir,
        '--extensions-dir', this.extensionsDir,
        '--disable-telemetry',
        '--disable-update-check',
        '--disable-workspace-trust',
        '--disable-getting-started-override',
        '--disable-file-downloads',
        '--ignore-last-opened',
        folder,
      ],
      { stdio: ['ignore', log, log], detached: true, env: { ...process.env, CS_DISABLE_FILE_DOWNLOADS: '1' } },
    );
    fs.closeSync(log);
    const exited = new Promise((resolve) => this.proc.once('exit', (code) => resolve(code)));
    await waitFor(
      'code-server to answer /healthz',
      async () => {
        const code = await Promise.race([exited, sleep(0).then(() => undefined)]);
        if (code !== undefined) throw new Error(`code-server exited with ${code}; see ${this.logFile}`);
        const res = await fetch(`http://127.0.0.1:${this.port}/healthz`).catch(() => null);
        return res?.ok ?? false;
      },
      { timeout: 60_000 },
    );
    return `http://127.0.0.1:${this.port}/?folder=${encodeURIComponent(folder)}`;
  }

  async stop() {
    const proc = this.proc;
    this.proc = null;
    if (!proc || proc.exitCode !== null) return;
    const gone = new Promise((resolve) => proc.once('exit', resolve));
    try {
      process.kill(-proc.pid, 'SIGTERM'); // the process group this harness started
    } catch {
      return;
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-proc.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }, 5000);
    await gone;
    clearTimeout(timer);
  }

  /** The text of the extension's LogOutputChannel ("CodeSynapse"), as VS Code wrote it to disk. */
  extensionLog() {
    return this.logFiles()
      .filter((p) => path.basename(p) === 'CodeSynapse.log')
      .map((p) => fs.readFileSync(p, 'utf8'))
      .join('\n');
  }

  logFiles() {
    const found = [];
    const walk = (dir) => {
      let entries;
      try {
        entries = fs.readdirSync(dir, { withFileTypes: true });
      } catch {
        return;
      }
      for (const e of entries) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (/codesynapse/i.test(e.name) && e.name.endsWith('.log')) found.push(p);
      }
    };
    walk(path.join(this.userDataDir, 'logs'));
    return found;
  }

  /** The extension's log file(s) and the code-server log, for failure reports. */
  logs() {
    const found = this.logFiles();
    const parts = found.map((p) => `--- ${path.relative(this.root, p)}\n${tail(p, 60)}`);
    parts.push(`--- code-server.log\n${tail(this.logFile, 30)}`);
    return parts.join('\n');
  }
}

function tail(file, lines) {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(missing)';
  }
}

export async function launchBrowser() {
  const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  return chromium.launch({
    executablePath,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-dev-shm-usage',
    ],
  });
}

/** Helpers that drive the VS Code workbench the way a person does: keyboard, palette, clicks. */
export class Workbench {
  constructor(page) {
    this.page = page;
  }

  async ready() {
    await this.page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 90_000 });
    await this.page.locator('#workbench\\.parts\\.statusbar').waitFor({ state: 'visible', timeout: 90_000 });
  }

  quickInput() {
    return this.page.locator('.quick-input-widget .quick-input-box input');
  }

  /** Give the keyboard to the workbench (not a webview or a notification). */
  async focusWorkbench() {
    await this.page.keyboard.press('Escape');
    await this.page.keyboard.press('Escape');
  }

  /**
   * Run a command from the Command Palette by its full title, e.g. "CodeSynapse: Show Callers".
   * `keepSelection` skips the Escape presses that close popups (Escape also clears an editor selection).
   */
  async runCommand(title, { keepSelection = false } = {}) {
    if (!keepSelection) await this.focusWorkbench();
    await this.page.keyboard.press('F1');
    const input = this.quickInput();
    await input.waitFor({ state: 'visible', timeout: 15_000 });
    await input.fill(`>${title}`);
    await this.pickExact(title);
  }

  /** Click the quick-pick row whose label (an icon aside) is `label`. */
  async pickLabel(label) {
    const row = this.page
      .locator('.quick-input-list .monaco-list-row')
      .filter({ has: this.page.locator('.label-name', { hasText: label }) })
      .first();
    await row.waitFor({ state: 'visible', timeout: 15_000 });
    await row.click();
  }

  /** Pick a color theme the way a user does: Preferences: Color Theme, then its name. */
  async setColorTheme(label) {
    await this.runCommand('Preferences: Color Theme');
    await this.quickInput().fill(label);
    await this.pickExact(label);
  }

  /** Drag the side bar's edge until the side bar is `width` pixels wide. */
  async setSidebarWidth(width) {
    const bar = this.page.locator('#workbench\\.parts\\.sidebar');
    const box = await bar.boundingBox();
    const y = box.y + box.height / 2;
    const x = box.x + box.width - 1;
    await this.page.mouse.move(x, y);
    await this.page.mouse.down();
    await this.page.mouse.move(box.x + width, y, { steps: 8 });
    await this.page.mouse.up();
    return (await bar.boundingBox()).width;
  }

  /** Click the quick-pick row whose label is exactly `label`. */
  async pickExact(label) {
    const exact = new RegExp(`^${label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
    const row = this.page
      .locator('.quick-input-list .monaco-list-row')
      .filter({ has: this.page.locator('.label-name', { hasText: exact }) })
      .first();
    await row.waitFor({ state: 'visible', timeout: 15_000 });
    await row.click();
  }

  /**
   * Change a setting in the Settings editor, as a user does, then close the editor.
   * `tab` is the settings tab: 'User', or 'Remote' for machine-scoped settings (code-server
   * is a remote window, where those are not shown under User).
   */
  async setSetting(key, value, tab = 'User') {
    await this.runCommand('Preferences: Open User Settings');
    await this.page.locator('.settings-editor').waitFor({ state: 'visible', timeout: 15_000 });
    await this.page.locator('.settings-editor .settings-tabs-widget .action-label', { hasText: new RegExp(`^${tab}`) }).first().click();
    await this.page.locator('.settings-editor .suggest-input-container').click();
    await this.page.keyboard.type(key);
    const input = this.page.locator(`.settings-editor input[aria-label="${key}"]`).first();
    await input.waitFor({ state: 'visible', timeout: 15_000 });
    await input.fill(String(value));
    await input.press('Tab');
    await this.page.waitForTimeout(1000); // the settings editor writes after a short debounce
    await this.runCommand('View: Close Editor');
  }

  /** Click on the editor line that contains `text` (gives the editor the keyboard). */
  async clickLine(text) {
    const line = this.page.locator('.monaco-editor .view-lines .view-line', { hasText: text }).first();
    await line.waitFor({ state: 'visible', timeout: 15_000 });
    await line.click();
  }

  /** Answer an input box opened by a command; `title` is the box's title. */
  async answerInputBox(title, text) {
    await this.page.locator('.quick-input-widget .quick-input-title', { hasText: title }).waitFor({ state: 'visible', timeout: 15_000 });
    const input = this.quickInput();
    await input.fill(text);
    await this.page.keyboard.press('Enter');
  }

  async inputBoxValue(title) {
    await this.page.locator('.quick-input-widget .quick-input-title', { hasText: title }).waitFor({ state: 'visible', timeout: 15_000 });
    return this.quickInput().inputValue();
  }

  /** Open a workspace file with Quick Open and put the cursor at line:column (1-based). */
  async openFile(relativePath, line, column) {
    const name = path.basename(relativePath);
    await this.runCommand('Go to File...');
    await this.quickInput().fill(relativePath);
    await this.pickExact(name);
    await this.page.locator('.tab.active', { hasText: name }).first().waitFor({ timeout: 15_000 });
    await this.page.locator('.monaco-editor .view-lines').first().waitFor({ state: 'visible', timeout: 15_000 });
    if (line) {
      await this.runCommand('Go to Line/Column...');
      await this.quickInput().fill(`:${line}:${column ?? 1}`);
      await this.page.keyboard.press('Enter');
      await waitFor(`the cursor at ${line}:${column ?? 1}`, async () => (await this.statusBarText('Ln '))?.startsWith(`Ln ${line}, Col ${column ?? 1}`));
    }
  }

  async statusBarText(prefix = 'CodeSynapse:') {
    const item = this.page.locator('#workbench\\.parts\\.statusbar .statusbar-item', { hasText: prefix }).first();
    if ((await item.count()) === 0) return null;
    return (await item.innerText()).trim();
  }

  /** The toast whose message contains `text`. */
  async notification(text, timeout = 30_000) {
    const toast = this.page.locator('.notifications-toasts .notification-list-item', { has: this.page.locator('.notification-list-item-message', { hasText: text }) }).first();
    await toast.waitFor({ state: 'visible', timeout });
    return toast;
  }

  async notificationButtons(toast) {
    return (await toast.locator('.notification-list-item-buttons-container .monaco-button').allInnerTexts()).map((t) => t.trim());
  }

  async notifications() {
    return this.page.locator('.notifications-toasts .notification-list-item-message').allInnerTexts();
  }

  /** The frame that holds the CodeSynapse panel (webview views live in nested iframes). */
  async panelFrame(timeout = 30_000) {
    return waitFor(
      'the CodeSynapse panel webview',
      async () => {
        for (const frame of this.page.frames()) {
          if (frame.isDetached()) continue;
          const form = await frame.$('#task-form').catch(() => null);
          if (form) return frame;
        }
        return null;
      },
      { timeout },
    );
  }

  async screenshot(name) {
    fs.mkdirSync(OUTPUT_DIR, { recursive: true });
    const file = path.join(OUTPUT_DIR, name);
    await this.page.screenshot({ path: file });
    return file;
  }
}
