import * as vscode from 'vscode';
import { DOCUMENT_SELECTOR, ServerConnection } from './client';
import { ContextController, registerCommands } from './commands';
import { currentSettings, needsRestart } from './config';
import { SymbolCodeLensProvider } from './codeLens';
import { registerLanguageModelTools } from './lmTools';
import { IndexStatusBar } from './statusBar';
import { ContextPanel, VIEW_ID } from './views/panel';
import { POLICY_VIEW_ID, PolicyEffectsView, REFRESH_POLICY_EFFECTS } from './views/policyEffects';
import { renderSavings } from './savings';

export interface CodeSynapseExtensionApi {
  connection: ServerConnection;
  controller: ContextController;
  statusBar: IndexStatusBar;
  panel: ContextPanel;
}

export function activate(context: vscode.ExtensionContext): CodeSynapseExtensionApi {
  const log = vscode.window.createOutputChannel('CodeSynapse', { log: true });
  const { settings } = currentSettings();
  const connection = new ServerConnection(log, context.extensionPath);
  const statusBar = new IndexStatusBar(connection, settings.refreshSeconds, log);
  const panel = new ContextPanel(context.extensionUri);
  const controller = new ContextController(connection, panel, statusBar, log);
  const lenses = new SymbolCodeLensProvider(connection);
  const policyEffects = new PolicyEffectsView(connection, log);

  context.subscriptions.push(
    log,
    connection,
    statusBar,
    panel,
    controller,
    vscode.window.registerWebviewViewProvider(VIEW_ID, panel),
    lenses,
    vscode.languages.registerCodeLensProvider(DOCUMENT_SELECTOR, lenses),
    ...registerCommands(controller, connection, log),
    ...registerLanguageModelTools(connection, log),
    policyEffects,
    vscode.window.registerTreeDataProvider(POLICY_VIEW_ID, policyEffects),
    vscode.commands.registerCommand(REFRESH_POLICY_EFFECTS, () => policyEffects.refresh()),
    statusBar.onDidChangeSavings((savings) => void panel.setSavings(renderSavings(savings))),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (!event.affectsConfiguration('codesynapse')) return;
      const next = currentSettings();
      for (const w of next.warnings) log.warn(`setting ${w.key}: ${w.message}`);
      statusBar.setRefreshSeconds(next.settings.refreshSeconds);
      if (needsRestart(event)) void connection.restart();
    }),
  );

  void connection.start();
  return { connection, controller, statusBar, panel };
}

export function deactivate(): void {
  // Disposables in context.subscriptions stop the client.
}
