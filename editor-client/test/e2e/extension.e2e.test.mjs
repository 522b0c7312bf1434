// End-to-end test of the extension in a real VS Code (code-server 4.100.3), against the real
// CodeSynapse server started by the extension, on a copy of fixtures/python_repo.
// Expected values are written out from the fixture's source.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  CodeServer,
  OUTPUT_DIR,
  REPO_DIR,
  Workbench,
  findCodeServer,
  findPython,
  findVsix,
  launchBrowser,
  sleep,
  waitFor,
} from './harness.mjs';

const FIXTURE = path.join(REPO_DIR, 'fixtures', 'python_repo');
/** Files of the fixture the index covers: shop/{__init__,cart,pricing,payment}.py, tests/test_cart.py and README.md. */
const EXPECTED_FILES = 6;
const CARD_BUDGET = 1200;
const SERVER_READY_MS = Number(process.env.CODESYNAPSE_E2E_READY_MS ?? 240_000);

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'codesynapse-vscode-e2e-'));
const workspace = path.join(root, 'workspace', 'python_repo');
let codeServer;
let browser;
let page;
let wb;
let python;
let bareVenvPython;
const failures = [];

/** Run a test body; on failure keep a screenshot and the logs next to the test output. */
function step(name, fn) {
  return async () => {
    try {
      await fn();
    } catch (error) {
      const safe = name.replace(/[^a-z0-9]+/gi, '-').toLowerCase();
      const shot = await wb?.screenshot(`failure-${safe}.png`).catch(() => null);
      const logs = codeServer?.logs() ?? '';
      failures.push(name);
      const detail = `${shot ? `screenshot: ${shot}\n` : ''}${logs}`;
      fs.mkdirSync(OUTPUT_DIR, { recursive: true });
      fs.writeFileSync(path.join(OUTPUT_DIR, `failure-${safe}.log`), detail);
      console.log(`# ${name} failed; logs:\n${detail.split('\n').map((l) => `#   ${l}`).join('\n')}`);
      throw error;
    }
  };
}

/**
 * A screenshot for docs/EXTENSION.md: kept with the test output, and written to docs/images/
 * when CODESYNAPSE_E2E_UPDATE_DOCS=1 (the run that regenerates the user guide's pictures).
 */
async function docShot(name) {
  const file = await wb.screenshot(name);
  if (process.env.CODESYNAPSE_E2E_UPDATE_DOCS === '1') fs.copyFileSync(file, path.join(REPO_DIR, 'docs', 'images', name));
  return file;
}

async function panel() {
  return wb.panelFrame();
}

/** Wait for the panel to show an answer titled `title` (and, if given, whose subtitle contains `subtitle`). */
async function waitForResult(title, subtitle, timeout = 60_000) {
  const frame = await panel();
  const head = frame.locator('.result-head', { has: frame.locator('h2', { hasText: title }) });
  const wanted = subtitle ? head.filter({ has: frame.locator('.subtitle', { hasText: subtitle }) }) : head;
  await wanted.first().waitFor({ state: 'visible', timeout });
  await frame.locator('.result.busy').waitFor({ state: 'detached', timeout });
  const error = frame.locator('.error-result .error');
  if (await error.count()) throw new Error(`panel shows an error for "${title}": ${await error.innerText()}`);
  return frame;
}

async function meter(frame) {
  const m = frame.locator('.result .meter').first();
  await m.waitFor({ state: 'visible', timeout: 10_000 });
  return {
    tokens: Number(await m.getAttribute('data-tokens')),
    budget: Number(await m.getAttribute('data-budget')),
    raw: await m.getAttribute('data-raw'),
    rawSource: await m.getAttribute('data-raw-source'),
    summary: (await m.locator('.meter-summary').innerText()).trim(),
  };
}

describe('CodeSynapse extension in VS Code 1.100 (code-server)', { timeout: 15 * 60_000 }, () => {
  before(async () => {
    python = findPython();
    const bin = findCodeServer();
    const vsix = findVsix();
    fs.mkdirSync(path.dirname(workspace), { recursive: true });
    fs.cpSync(FIXTURE, workspace, {
      recursive: true,
      filter: (src) => !/(^|\/)(__pycache__|\.codesynapse-data|\.pytest_cache)(\/|$)/.test(src),
    });
    const git = (...args) => execFileSync('git', args, { cwd: workspace, stdio: 'pipe' });
    git('init', '-q', '-b', 'main');
    git('config', 'user.email', 'e2e@example.invalid');
    git('config', 'user.name', 'e2e');
    git('config', 'commit.gpgsign', 'false');
    git('add', '.');
    git('commit', '-qm', 'fixture');
    // An interpreter without the codesynapse package, as a user's fresh venv would be.
    execFileSync(python, ['-m', 'venv', '--without-pip', path.join(root, 'bare-venv')]);
    bareVenvPython = path.join(root, 'bare-venv', 'bin', 'python');

    codeServer = new CodeServer({ bin, root: path.join(root, 'code-server') });
    console.log(`# ${codeServer.installExtension(vsix).split('\n').pop()}`);
    codeServer.writeSettings({
      'codesynapse.pythonPath': bareVenvPython,
      'codesynapse.budget.symbolCard': CARD_BUDGET,
      'codesynapse.statusBar.refreshSeconds': 1,
    });
    const url = await codeServer.start(workspace);
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    wb = new Workbench(page);
    await page.goto(url);
    await wb.ready();
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await codeServer?.stop();
    if (failures.length === 0) fs.rmSync(root, { recursive: true, force: true });
    else console.log(`# kept ${root} for inspection`);
  });

  it(
    'explains a missing codesynapse package with the fixes: Install Server, Select Interpreter',
    step('missing package', async () => {
      const text = await waitFor('the status bar to say the server is not running', async () => {
        const t = await wb.statusBarText();
        return t?.includes('CodeSynapse: not running') ? t : null;
      }, { timeout: 90_000 });
      assert.match(text, /CodeSynapse: not running$/);
      const toast = await wb.notification('codesynapse package is not installed');
      assert.equal(
        (await toast.locator('.notification-list-item-message').innerText()).trim(),
        `The codesynapse package is not installed for "${bareVenvPython}". Click "Install Server" to install the server that ships with this extension into it, or "Select Interpreter" to pick one that has it.`,
      );
      assert.deepEqual(await wb.notificationButtons(toast), ['Install Server', 'Select Interpreter', 'Show Log']);
      await docShot('extension-setup-error.png');
      // The bundled wheel is installed with the interpreter's pip; this venv has none, and says so.
      await toast.locator('.monaco-button', { hasText: /^Install Server$/ }).click();
      const noPip = await wb.notification('has no pip', 120_000);
      assert.equal(
        (await noPip.locator('.notification-list-item-message').innerText()).trim(),
        `"${bareVenvPython}" has no pip, so the server cannot be installed into it. Select an interpreter with pip (or run "${bareVenvPython} -m ensurepip").`,
      );
      assert.deepEqual(await wb.notificationButtons(noPip), ['Select Interpreter', 'Show Log']);
      await noPip.locator('.monaco-button', { hasText: /^Select Interpreter$/ }).click();
    }),
  );

  it(
    'restarts on the interpreter picked in the picker (a remote window: no Settings editor) and shows the index',
    step('status bar', async () => {
      // The picker opened by the toast's "Select Interpreter": type a path of one that has the package.
      await wb.page.locator('.quick-input-widget .quick-input-title', { hasText: 'select the Python interpreter' }).waitFor({ state: 'visible', timeout: 15_000 });
      await wb.pickLabel('Enter interpreter path…');
      await wb.answerInputBox('CodeSynapse: interpreter path', python);
      await codeServer.waitForSetting('codesynapse.pythonPath', python);
      const text = await waitFor(
        'the status bar to show the indexed files',
        async () => {
          const t = await wb.statusBarText();
          return t && /CodeSynapse: \d[\d,]* files/.test(t) && !t.includes('indexing') ? t : null;
        },
        { timeout: SERVER_READY_MS, interval: 500 },
      );
      assert.equal(text, `CodeSynapse: ${EXPECTED_FILES} files`);
      // The LogOutputChannel on disk: the restart, and the agent tools VS Code accepted.
      const log = codeServer.extensionLog();
      assert.match(log, /\[info\] registered \d+ language-model tools/);
      // the first index's progress came as a notification (the log records what it showed)
      assert.match(log, /\[info\] CodeSynapse: indexing: scanning the workspace · 0%/);
      assert.match(log, new RegExp(`\\[info\\] indexing done: ${EXPECTED_FILES} files, \\d+ symbols`));
      // the welcome text's buttons run commands
      await wb.runCommand('CodeSynapse: Focus on Context View');
      const welcome = await panel();
      await welcome.locator('.welcome button.command').first().waitFor({ timeout: 15_000 });
      assert.deepEqual(
        (await welcome.locator('.welcome-actions button.command').allInnerTexts()).map((t) => t.trim()),
        ['Show Symbol Card', 'Show Callers', 'Show Callees', 'Context for the Current Git Diff'],
      );
      await docShot('extension-welcome.png');
      await welcome.locator('.welcome button.command', { hasText: 'Index status' }).click();
      await waitForResult('Index status');
      // the walkthrough
      await wb.runCommand('CodeSynapse: Get Started');
      await page.locator('.gettingStartedContainer', { hasText: 'Get started with CodeSynapse' }).first().waitFor({ timeout: 20_000 });
      await page.locator('.gettingStartedContainer', { hasText: 'Pick the Python that runs the server' }).first().waitFor({ timeout: 10_000 });
      await docShot('extension-walkthrough.png');
      await wb.runCommand('View: Close Editor');
      assert.match(log, new RegExp(`\\[info\\] starting server: ${python.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} -m codesynapse serve \\(pythonPath\\)`));
    }),
  );

  it(
    'says clearly, in a toast, that a program picked as the interpreter is not Python',
    step('not python', async () => {
      await wb.runCommand('CodeSynapse: Select Python Interpreter…');
      await wb.pickLabel('Enter interpreter path…');
      await wb.answerInputBox('CodeSynapse: interpreter path', '/bin/ls');
      const toast = await wb.notification('is not a Python interpreter', 60_000);
      assert.equal(
        (await toast.locator('.notification-list-item-message').innerText()).trim(),
        '"/bin/ls" (from codesynapse.pythonPath) is not a Python interpreter: it did not run Python code. Select a Python 3.11+ interpreter.',
      );
      assert.deepEqual(await wb.notificationButtons(toast), ['Select Interpreter', 'Show Log']);
      assert.match(await wb.statusBarText(), /CodeSynapse: not running$/);
      await toast.locator('.monaco-button', { hasText: /^Select Interpreter$/ }).click();
      await wb.pickLabel('Enter interpreter path…');
      await wb.answerInputBox('CodeSynapse: interpreter path', python);
      await waitFor('the server to run again', async () => /CodeSynapse: \d+ files/.test((await wb.statusBarText()) ?? ''), { timeout: SERVER_READY_MS, interval: 500 });
    }),
  );

  it(
    'shows the card of a symbol typed by name, with its token meter',
    step('symbol card', async () => {
      await wb.runCommand('CodeSynapse: Show Symbol Card');
      await wb.answerInputBox('CodeSynapse: symbol card', 'shop.pricing.apply_discount');
      const frame = await waitForResult('Symbol card', 'shop.pricing.apply_discount');
      const card = frame.locator('.card[data-qualified-name="shop.pricing.apply_discount"]').first();
      await card.waitFor({ state: 'visible', timeout: 10_000 });
      assert.equal(await card.locator('.kind').first().innerText(), 'function');
      assert.equal(await card.locator('.location').first().innerText(), 'shop/pricing.py:6–8');
      assert.equal(await card.locator('.summary').first().innerText(), 'Reduce an amount by a percentage.');
      const m = await meter(frame);
      assert.equal(m.budget, CARD_BUDGET);
      assert.ok(m.tokens > 0 && m.tokens <= CARD_BUDGET, `tokens ${m.tokens} within (0, ${CARD_BUDGET}]`);
      // Raw cost, reported by the server (rawTokens): the card's file plus its callers' and
      // tests' files, ceil(bytes / 4) each.
      const files = ['shop/pricing.py', 'shop/cart.py', 'tests/test_cart.py'];
      const raw = files.reduce((sum, f) => sum + Math.ceil(fs.statSync(path.join(workspace, f)).size / 4), 0);
      assert.equal(m.rawSource, 'server');
      assert.equal(Number(m.raw), raw);
      const saved = Math.round(((raw - m.tokens) / raw) * 1000) / 10;
      assert.equal(
        m.summary,
        `${m.tokens.toLocaleString('en-US')} of 1,200 tokens (${Math.round((m.tokens / 1200) * 100)}% of budget) · raw files ${raw.toLocaleString('en-US')} tokens · ${saved}% saved`,
      );
      // how the answer was made is behind a closed "Details" disclosure, not in the card
      const body = await frame.locator('.result .body').innerText();
      assert.doesNotMatch(body, /Legs|confidence|bytes|Ran|Hits|[Ff]ingerprint/);
      const details = frame.locator('.result details.diagnostics');
      assert.equal(await details.getAttribute('open'), null);
      await details.locator('summary').click();
      assert.match(await details.locator('.provenance').innerText(), /found by .* · \d[\d,]* bytes$/);
      await details.locator('summary').click();
      await docShot('extension-card.png');
    }),
  );

  it(
    'lists what a small budget left out and loads more',
    step('load more', async () => {
      await wb.setSetting('codesynapse.budget.symbolCard', 256);
      await codeServer.waitForSetting('codesynapse.budget.symbolCard', 256);
      await wb.runCommand('CodeSynapse: Show Symbol Card');
      await wb.answerInputBox('CodeSynapse: symbol card', 'shop.cart.Cart.total');
      let frame = await waitForResult('Symbol card', 'shop.cart.Cart.total');
      assert.equal((await meter(frame)).budget, 256);
      const omitted = frame.locator('.omitted');
      await omitted.waitFor({ timeout: 10_000 });
      assert.match(await omitted.locator('h3').innerText(), /^Omitted/);
      assert.ok((await omitted.locator('.omission').count()) > 0, 'at least one omission is listed');
      assert.equal(await frame.locator('.card[data-qualified-name="shop.cart.Cart.total"] .callers li').count(), 0);
      await frame.locator('button.more').click();
      await frame.locator('.meter[data-budget="512"]').waitFor({ timeout: 10_000 });
      frame = await waitForResult('Symbol card', 'shop.cart.Cart.total');
      const callers = await frame.locator('.card[data-qualified-name="shop.cart.Cart.total"] .callers').innerText();
      assert.ok(callers.includes('shop.cart.Cart.checkout'), `callers after load more:\n${callers}`);
      await wb.setSetting('codesynapse.budget.symbolCard', CARD_BUDGET);
      await codeServer.waitForSetting('codesynapse.budget.symbolCard', CARD_BUDGET);
    }),
  );

  it(
    'shows the callees of the symbol at the cursor',
    step('callees at cursor', async () => {
      await wb.openFile('shop/cart.py', 24, 10); // "def total(self, percent=0):" — cursor on "total"
      await page.keyboard.press('Control+Alt+Shift+O'); // the keybinding of Show Callees
      // the subtitle names the symbol, not the cursor position that asked for it
      const frame = await waitForResult('Callees', 'shop.cart.Cart.total');
      assert.equal(await frame.locator('.subtitle').innerText(), 'shop.cart.Cart.total');
      // a tree, each callee once with its call sites under it
      const nodes = await frame.locator('.calltree[data-direction="callees"] > ul.tree > li.tree-node').evaluateAll((els) => els.map((e) => e.getAttribute('data-qualified-name')));
      assert.deepEqual(nodes, ['shop.pricing.apply_discount', 'shop.pricing.with_tax']);
      assert.equal(await frame.locator('.tree-node[data-qualified-name="shop.pricing.with_tax"] .site-count').first().innerText(), '1 call');
      assert.equal((await meter(frame)).budget, 20000);
      await docShot('extension-callees.png');
      // The same calls in VS Code's own Call Hierarchy view, fed by the server.
      await frame.locator('.calltree[data-direction="callees"] button.hierarchy').click();
      const sidebar = page.locator('#workbench\\.parts\\.sidebar');
      await sidebar.locator('.monaco-list-row', { hasText: 'apply_discount' }).first().waitFor({ timeout: 20_000 });
      await sidebar.locator('.monaco-list-row', { hasText: 'with_tax' }).first().waitFor({ timeout: 10_000 });
      await docShot('extension-call-hierarchy.png');
      await wb.runCommand('View: Show CodeSynapse');
      // A symbol in the panel opens its card.
      await (await waitForResult('Callees', 'shop.cart.Cart.total')).locator('button.symbol[data-action="card"][data-selector="shop.pricing.apply_discount"]').first().click();
      const card = await waitForResult('Symbol card', 'shop.pricing.apply_discount');
      await card.locator('.card[data-qualified-name="shop.pricing.apply_discount"]').first().waitFor({ timeout: 10_000 });
      // The editor beside the panel with a card and its token meter: the user guide's picture.
      await docShot('extension-panel.png');
    }),
  );

  it(
    'answers a task typed into the panel within its budget',
    step('task', async () => {
      const frame = await panel();
      await frame.locator('#task').fill('apply a discount to the cart total');
      await frame.locator('#task-form button[type="submit"]').click();
      const result = await waitForResult('Context for a task', 'apply a discount to the cart total');
      assert.equal(await result.locator('.subtitle').innerText(), 'apply a discount to the cart total');
      const m = await meter(result);
      assert.equal(m.budget, 1500);
      assert.ok(m.tokens > 0 && m.tokens <= 1500, `tokens ${m.tokens} within (0, 1500]`);
      // The candidates the answer left out are listed, and one can be added to it.
      const adds = result.locator('.candidates button.add');
      await adds.first().waitFor({ timeout: 10_000 });
      const before = await adds.count();
      // as many as the answer says it left out, each with its kind and place (the server names them)
      const counts = await result.locator('.omitted .omission').evaluateAll((els) =>
        els.filter((e) => /candidate/.test(e.querySelector('.what')?.textContent ?? '')).map((e) => Number((e.querySelector('.count')?.textContent ?? '0').replace(/,/g, ''))));
      assert.equal(before, counts.reduce((a, b) => a + b, 0), `candidates listed vs counted ${counts.join('+')}`);
      assert.equal(await result.locator('.candidates .candidate .kind').count(), before);
      assert.equal(await result.locator('.candidates .candidate button.location').count(), before);
      const pick = await adds.first().getAttribute('data-selector');
      const shown = await result.locator('.result .body .card').evaluateAll((els) => els.map((e) => e.getAttribute('data-qualified-name')));
      assert.ok(!shown.includes(pick), `${pick} is not among the cards shown: ${shown.join(', ')}`);
      await adds.first().click();
      await result.locator(`.added .card[data-qualified-name="${pick}"]`).waitFor({ timeout: 10_000 });
      assert.equal(await result.locator('.candidates button.add').count(), before - 1);
      assert.ok((await meter(result)).tokens > m.tokens, 'the meter counts the added card');
      await result.locator('.candidates').scrollIntoViewIfNeeded(); // the picture shows the list
      await docShot('extension-task.png');
    }),
  );

  it(
    'gives the context of the current git diff',
    step('git diff', async () => {
      const file = path.join(workspace, 'shop', 'pricing.py');
      fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('TAX_RATE = 0.2', 'TAX_RATE = 0.25'));
      await wb.runCommand('CodeSynapse: Context for the Current Git Diff');
      const frame = await waitForResult('Context for the current git diff');
      assert.match(await frame.locator('.subtitle').innerText(), /^1 changed file, \d[\d,]* bytes of diff$/);
      const m = await meter(frame);
      assert.equal(m.budget, 20000);
      assert.ok(m.tokens > 0 && m.tokens <= 20000);
    }),
  );

  it(
    'answers standard LSP requests from the same server (go to definition)',
    step('definition', async () => {
      await wb.openFile('shop/cart.py', 28, 17); // "return with_tax(net)" — cursor on "with_tax"
      await wb.runCommand('Go to Definition');
      await page.locator('.tab.active', { hasText: 'pricing.py' }).waitFor({ timeout: 15_000 });
      const pos = await waitFor('the cursor on the definition', async () => {
        const t = await wb.statusBarText('Ln ');
        return t?.startsWith('Ln 11,') ? t : null;
      });
      assert.match(pos, /^Ln 11, Col \d+/);
      // the editor's context menu has the CodeSynapse items in a "CodeSynapse" submenu
      await wb.clickLine('def with_tax(amount):');
      await page.locator('.monaco-editor .view-lines .view-line', { hasText: 'def with_tax(amount):' }).first().click({ button: 'right' });
      const entry = page.locator('.context-view .action-item', { hasText: /^CodeSynapse$/ }).first();
      await entry.waitFor({ timeout: 10_000 });
      await entry.hover();
      const sub = page.locator('.context-view .monaco-submenu .action-label');
      await sub.first().waitFor({ timeout: 10_000 });
      const labels = (await sub.allInnerTexts()).map((t) => t.trim()).filter(Boolean);
      for (const want of ['Show Symbol Card', 'Show Callers', 'Show Callees', 'Show in Call Hierarchy']) assert.ok(labels.includes(want), `submenu: ${labels.join(', ')}`);
      await docShot('extension-context-menu.png');
      await page.keyboard.press('Escape');
      await page.keyboard.press('Escape');
    }),
  );

  it(
    'shows caller and test counts as CodeLens over definitions, and links from the hover',
    step('codelens and hover', async () => {
      await wb.openFile('shop/cart.py', 24, 10); // "def total(self, percent=0):" — cursor on "total"
      // Cart.total is called at cart.py:32 (checkout) and tests/test_cart.py:8, and test_total tests it
      // (:visible — an editor in a background tab keeps its lenses, hidden)
      await page.locator('.codelens-decoration:visible', { hasText: 'callers' }).first().waitFor({ timeout: 60_000 });
      // the lens right above "def total": the last one above that line
      const lineTop = (await page.locator('.monaco-editor .view-lines .view-line', { hasText: 'def total(self, percent=0):' }).first().boundingBox()).y;
      const above = [];
      for (const el of await page.locator('.codelens-decoration').all()) {
        const box = await el.boundingBox();
        if (box && box.y < lineTop) above.push({ el, y: box.y });
      }
      const lens = above.sort((a, b) => b.y - a.y)[0].el;
      assert.equal((await lens.innerText()).trim(), '2 callers · 1 test');
      const all = (await page.locator('.codelens-decoration').allInnerTexts()).map((t) => t.trim());
      assert.ok(all.every((t) => /^(no callers|\d+ callers?) · (no tests|\d+ tests?)$/.test(t)), `lens titles: ${all.join(' | ')}`);
      await docShot('extension-codelens.png');
      await lens.locator('a').first().click();
      await waitForResult('Symbol card', 'shop.cart.Cart.total');
      // the hover (the server's card) ends with links into CodeSynapse
      await wb.openFile('shop/cart.py', 24, 10);
      await wb.runCommand('Show or Focus Hover');
      const hover = page.locator('.monaco-hover:not(.hidden)').first();
      await hover.locator('a', { hasText: 'Open card' }).waitFor({ timeout: 15_000 });
      assert.deepEqual(
        (await hover.locator('a[data-href^="command:codesynapse."], a[href^="command:codesynapse."]').allInnerTexts()).map((t) => t.trim()),
        ['Open card', 'Callers', 'Callees', 'Call Hierarchy'],
      );
      await docShot('extension-hover.png');
      await hover.locator('a', { hasText: 'Callers' }).click();
      const frame = await waitForResult('Callers', 'shop.cart.Cart.total');
      assert.ok((await frame.locator('.calltree[data-direction="callers"] .tree-node').count()) >= 2);
    }),
  );

  it(
    'counts an unsaved buffer in the status bar',
    step('unsaved buffer', async () => {
      await wb.openFile('shop/cart.py');
      await wb.clickLine('return with_tax(net)');
      await page.keyboard.press('End');
      await page.keyboard.type('  # edited');
      await page.locator('.tab.dirty', { hasText: 'cart.py' }).waitFor({ timeout: 10_000 });
      const text = await waitFor('the status bar to count the unsaved buffer', async () => {
        const t = await wb.statusBarText();
        return t?.includes('1 unsaved') ? t : null;
      }, { timeout: 30_000 });
      assert.match(text, /^CodeSynapse: \d+ files( · \d+ pending)? · 1 unsaved$/);
      // The context of the current changes is taken from the buffer, unsaved edit included.
      await wb.runCommand('CodeSynapse: Context for the Current Git Diff');
      const frame = await waitForResult('Context for the current git diff', '(1 unsaved)');
      assert.match(await frame.locator('.subtitle').innerText(), /^2 changed files \(1 unsaved\), \d[\d,]* bytes of diff$/);
      const body = await frame.locator('.result .body').innerText();
      assert.ok(body.includes('shop.cart.Cart.total'), `the unsaved edit of Cart.total is a changed symbol:\n${body}`);
      // Editing again marks the answer as possibly out of date, with Refresh.
      await wb.clickLine('# edited');
      await page.keyboard.press('End');
      await page.keyboard.type('!');
      await frame.locator('.stale', { hasText: 'shop/cart.py was edited after this answer' }).waitFor({ timeout: 10_000 });
      await docShot('extension-stale.png');
      await wb.runCommand('File: Revert File');
      await page.locator('.tab.dirty', { hasText: 'cart.py' }).waitFor({ state: 'detached', timeout: 10_000 });
    }),
  );

  it(
    'remembers a selection as a fact and recalls it',
    step('memory', async () => {
      await wb.openFile('shop/cart.py');
      await wb.clickLine('def total(self, percent=0):');
      await page.keyboard.press('End');
      await page.keyboard.press('Shift+Home'); // to the first non-blank character
      await waitFor('the selection of line 24', async () => /\(\d+ selected\)/.test((await wb.statusBarText('Ln 24')) ?? ''));
      await wb.runCommand('CodeSynapse: Remember Selection as a Fact', { keepSelection: true });
      await wb.answerInputBox('CodeSynapse: remember selection', 'Cart.total');
      await waitForResult('Remembered', 'Cart.total');
      await wb.runCommand('CodeSynapse: Recall…');
      await wb.answerInputBox('CodeSynapse: recall', 'Cart.total');
      const frame = await waitForResult('Recall', 'Cart.total');
      const body = await frame.locator('.result .body').innerText();
      assert.ok(body.includes('def total(self, percent=0):'), `recall shows the remembered text:\n${body}`);
      // entries and sentences, not field dumps
      assert.doesNotMatch(body, /Found by|Created at|Ran|Hits/);
      assert.ok((await frame.locator('.memory-entry[data-name="Cart.total"]').count()) === 1, body);
      // the memory list, with Delete
      await wb.runCommand('CodeSynapse: Show Memory');
      let list = await waitForResult('Memory');
      await list.locator('.memory-entry[data-name="Cart.total"] button.forget').click();
      const dialog = page.locator('.monaco-dialog-box');
      await dialog.waitFor({ timeout: 10_000 });
      assert.match(await dialog.innerText(), /Forget "Cart.total" and all its facts\?/);
      await docShot('extension-memory.png');
      await dialog.locator('.monaco-button', { hasText: /^Forget$/ }).click();
      await waitFor('Cart.total to be gone from the list', async () => {
        list = await panel();
        return (await list.locator('.result-head h2', { hasText: 'Memory' }).count()) === 1 && (await list.locator('.memory-entry[data-name="Cart.total"]').count()) === 0;
      });
    }),
  );

  it(
    'shows the session\'s savings in the status bar tooltip and the panel, and the policy\'s effects',
    step('savings and policy effects', async () => {
      // the answers of this session so far (cards, callers, task, diff, memory) are in its ledger
      const frame = await panel();
      const strip = frame.locator('#savings .savings');
      await strip.waitFor({ state: 'visible', timeout: 30_000 });
      const figures = await waitFor('the savings strip to count the answers', async () => {
        const f = {
          answers: Number(await strip.getAttribute('data-answers')),
          tokens: Number(await strip.getAttribute('data-tokens')),
          avoidedA: Number(await strip.getAttribute('data-avoided-a')),
          avoidedB: Number(await strip.getAttribute('data-avoided-b')),
          cacheHit: Number(await strip.getAttribute('data-cache-hit')),
        };
        return f.answers >= 5 ? f : null;
      }, { timeout: 30_000 });
      assert.ok(figures.tokens > 0, JSON.stringify(figures));
      assert.ok([figures.avoidedA, figures.avoidedB, figures.cacheHit].every(Number.isInteger), JSON.stringify(figures));
      assert.match(await strip.innerText(), /^Session · \d+ answers/);
      // the tooltip says the same figures as the strip. The session goes on answering meanwhile
      // (CodeLens, hover), so both are read again until one reading of each agrees.
      const hover = page.locator('.workbench-hover, .monaco-hover', { hasText: 'Session savings' }).first();
      const tip = await waitFor('the tooltip and the strip to show the same session figures', async () => {
        await page.mouse.move(900, 450);
        await page.locator('#workbench\\.parts\\.statusbar .statusbar-item', { hasText: 'CodeSynapse:' }).first().hover();
        await hover.waitFor({ state: 'visible', timeout: 15_000 });
        const text = await hover.innerText();
        const tokens = Number(await strip.getAttribute('data-tokens'));
        const answers = Number(await strip.getAttribute('data-answers'));
        return text.includes(`returned ${tokens.toLocaleString('en-US')} tokens`)
          && text.includes(`Session savings (${answers} answers):`) ? text : null;
      }, { timeout: 30_000 });
      assert.match(tip, /Session savings \(\d+ answers\):/);
      assert.match(tip, /returned [\d,]+ tokens/);
      assert.match(tip, /avoided vs \(a\) files behind the answers: -?[\d,]+/);
      assert.match(tip, /avoided vs \(b\) grep \+ files opened: -?[\d,]+/);
      assert.match(tip, /cache-hit \(repeats of earlier answers\): [\d,]+ tokens/);
      await page.mouse.move(900, 450);
      // the Policy Effects view: the fixture has no policy file, so the default rules (.git) act
      await wb.runCommand('CodeSynapse: Focus on Policy Effects View');
      const row = (text) => page.locator('.monaco-list-row', { hasText: text }).first();
      await row('Exclusions').waitFor({ state: 'visible', timeout: 60_000 });
      await row('Annotations').waitFor({ state: 'visible', timeout: 10_000 });
      await row('Redactions').waitFor({ state: 'visible', timeout: 10_000 });
      const git = row('.git');
      await git.waitFor({ state: 'visible', timeout: 10_000 });
      assert.match(await git.innerText(), /^\.git\s*[\d,]+ files? · [\d,]+ lines? · ~[\d,]+ tokens$/); // label, then its figures
      await docShot('extension-policy-effects.png');
      await wb.runCommand('CodeSynapse: Focus on Context View');
    }),
  );

  it(
    'lays out in a narrow side bar: meter bars stay, numbers are whole, names end in an ellipsis (light and dark)',
    step('narrow layout', async () => {
      await wb.runCommand('View: Close All Editors'); // no editor: the command asks for a name
      await wb.runCommand('CodeSynapse: Show Symbol Card');
      await wb.answerInputBox('CodeSynapse: symbol card', 'shop.cart.Cart.checkout');
      await waitForResult('Symbol card', 'shop.cart.Cart.checkout');
      for (const [theme, label] of [['Dark Modern', 'dark'], ['Light Modern', 'light']]) {
        await wb.setColorTheme(theme);
        await waitFor(`the ${label} theme`, async () => {
          const bg = await page.locator('.monaco-workbench').evaluate((el) => getComputedStyle(el).getPropertyValue('--vscode-editor-background'));
          const [r, g, b] = (bg.match(/[0-9a-f]{2}/gi) ?? []).map((h) => parseInt(h, 16));
          return label === 'light' ? r > 200 && g > 200 && b > 200 : r < 80 && g < 80 && b < 80;
        });
        await page.mouse.move(900, 450); // off the side bar's edge, which lights up under the pointer
        await sleep(500);
        await docShot(`extension-panel-${label}.png`);
        const width = await wb.setSidebarWidth(190);
        assert.ok(width < 230, `side bar narrowed to ${width}px`);
        const frame = await waitForResult('Symbol card', 'shop.cart.Cart.checkout');
        const layout = await frame.locator('.result').evaluate((root) => {
          const box = (el) => el.getBoundingClientRect();
          const bars = [...root.querySelectorAll('.meter .bar')].map((b) => box(b).width);
          const fills = [...root.querySelectorAll('.meter-returned .fill')].map((f) => box(f).width);
          const clipped = [...root.querySelectorAll('.meter-value')].filter((v) => v.scrollWidth > v.clientWidth + 1).map((v) => v.textContent);
          const title = root.querySelector('.card .title');
          const lineHeight = parseFloat(getComputedStyle(title).lineHeight) || 20;
          return {
            bars,
            fills,
            clipped,
            titleOneLine: box(title).height <= lineHeight * 1.5,
            titleEllipsis: getComputedStyle(title).textOverflow,
            titleCut: title.scrollWidth > title.clientWidth,
            overflowX: document.documentElement.scrollWidth > document.documentElement.clientWidth + 1,
          };
        });
        assert.ok(layout.bars.every((w) => w >= 24), `meter bars keep their width: ${layout.bars}`);
        assert.ok(layout.fills.every((w) => w > 0), `the returned bar is drawn: ${layout.fills}`);
        assert.deepEqual(layout.clipped, [], 'no meter number is clipped');
        assert.equal(layout.titleOneLine, true, 'the card name is on one line, not broken letter by letter');
        assert.equal(layout.titleEllipsis, 'ellipsis');
        assert.equal(layout.overflowX, false, 'nothing scrolls sideways');
        await page.mouse.move(900, 450);
        await sleep(300);
        await docShot(`extension-panel-${label}-narrow.png`);
        await wb.setSidebarWidth(420);
      }
      await wb.setColorTheme('Dark Modern');
    }),
  );
});
