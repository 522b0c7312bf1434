/**
 * Links from the editor into CodeSynapse: the hover's command links and the CodeLens titles.
 * Pure functions (no `vscode` import), unit-tested directly.
 */

/** The commands a hover or CodeLens may run (the hover's Markdown is trusted for these only). */
export const LINK_COMMANDS = [
  'codesynapse.showSymbolCard',
  'codesynapse.showCallers',
  'codesynapse.showCallees',
  'codesynapse.showInCallHierarchy',
] as const;

function commandUri(command: string, arg: unknown): string {
  return `command:${command}?${encodeURIComponent(JSON.stringify([arg]))}`;
}

/**
 * The qualified name of the symbol a CodeSynapse hover describes: its first line is
 * `**qualified.name** · kind` (server/codesynapse/lsp/navigation.py card_markdown).
 */
export function hoverSymbol(markdown: string): string | null {
  const m = /^\*\*([^*\n]+)\*\* · /.exec(markdown.trimStart());
  return m ? (m[1] as string).trim() : null;
}

/** The line of links appended to a CodeSynapse hover: open the card, callers, callees, call hierarchy. */
export function hoverLinks(qualifiedName: string, position: { uri: string; line: number; character: number }): string {
  return [
    `[Open card](${commandUri('codesynapse.showSymbolCard', qualifiedName)} "Show the symbol card in the CodeSynapse panel")`,
    `[Callers](${commandUri('codesynapse.showCallers', qualifiedName)} "Who calls it")`,
    `[Callees](${commandUri('codesynapse.showCallees', qualifiedName)} "What it calls")`,
    `[Call Hierarchy](${commandUri('codesynapse.showInCallHierarchy', position)} "Open VS Code's Call Hierarchy view")`,
  ].join(' · ');
}

const plural = (n: number, word: string): string => `${n.toLocaleString('en-US')} ${word}${n === 1 ? '' : 's'}`;

/** The CodeLens title over a definition, from its card's counts (call sites; absent counts are 0). */
export function lensTitle(counts: Record<string, number>): string {
  const callers = counts.callers ?? 0;
  const tests = counts.tests ?? 0;
  return [callers === 0 ? 'no callers' : plural(callers, 'caller'), tests === 0 ? 'no tests' : plural(tests, 'test')].join(' · ');
}

/** LSP SymbolKind numbers that get a CodeLens: class, method, constructor, function, interface, struct. */
export const LENS_SYMBOL_KINDS: ReadonlySet<number> = new Set([5, 6, 9, 12, 11, 23]);
