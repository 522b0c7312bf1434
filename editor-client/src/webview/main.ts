/**
 * Script of the CodeSynapse panel webview. It only displays HTML rendered (and escaped) by
 * the extension, sizes the meter bars, and posts the user's clicks back.
 */
interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const content = document.getElementById('content') as HTMLElement;
const savings = document.getElementById('savings');
const form = document.getElementById('task-form') as HTMLFormElement;
const task = document.getElementById('task') as HTMLTextAreaElement;

function sizeBars(root: ParentNode): void {
  root.querySelectorAll<HTMLElement>('.fill[data-fraction]').forEach((el) => {
    const f = Number(el.dataset.fraction);
    el.style.width = `${Number.isFinite(f) ? Math.max(0, Math.min(1, f)) * 100 : 0}%`;
  });
}

window.addEventListener('message', (event: MessageEvent) => {
  const msg = event.data as { type?: string; html?: string; task?: string };
  if (msg.type === 'render' && typeof msg.html === 'string') {
    content.innerHTML = msg.html;
    sizeBars(content);
    content.scrollTop = 0;
    window.scrollTo(0, 0);
  } else if (msg.type === 'savings' && typeof msg.html === 'string' && savings) {
    savings.innerHTML = msg.html; // escaped by the extension (savings.ts)
  } else if (msg.type === 'task' && typeof msg.task === 'string') {
    task.value = msg.task;
  }
});

content.addEventListener('click', (event) => {
  const target = (event.target as HTMLElement).closest<HTMLElement>('[data-action]');
  if (!target) return;
  event.preventDefault();
  const { action, selector, path, line, direction, command, name, id } = target.dataset;
  if (action === 'card' && selector) vscode.postMessage({ type: 'card', selector });
  else if (action === 'open' && path) vscode.postMessage({ type: 'open', path, line: line ? Number(line) : null });
  else if (action === 'more') vscode.postMessage({ type: 'more' });
  else if (action === 'hierarchy' && selector)
    vscode.postMessage({ type: 'hierarchy', selector, path: path ?? null, line: line ? Number(line) : null, direction });
  else if (action === 'command' && command) vscode.postMessage({ type: 'command', command });
  else if (action === 'forget' && name) vscode.postMessage({ type: 'forget', name, id: id ?? null });
  else if (action === 'refresh') vscode.postMessage({ type: 'refresh' });
  else if (action === 'add' && selector) vscode.postMessage({ type: 'add', selector });
});

function submitTask(): void {
  const text = task.value.trim();
  if (text) vscode.postMessage({ type: 'task', task: text });
}

form.addEventListener('submit', (event) => {
  event.preventDefault();
  submitTask();
});
task.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey) {
    event.preventDefault();
    submitTask();
  }
});

sizeBars(content);
vscode.postMessage({ type: 'ready' });
