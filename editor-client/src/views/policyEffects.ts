import * as vscode from 'vscode';
import type { ServerConnection } from '../client';
import { Methods } from '../protocol';
import { effectsTree, type EffectsNode } from '../savings';

export const POLICY_VIEW_ID = 'codesynapse.policyEffects';
export const REFRESH_POLICY_EFFECTS = 'codesynapse.refreshPolicyEffects';

/** The "Policy Effects" tree: what each rule of `.codesynapse.yaml` keeps out, annotates and redacts. */
export class PolicyEffectsView implements vscode.TreeDataProvider<EffectsNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<EffectsNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private nodes: EffectsNode[] | null = null;
  private loading: Promise<EffectsNode[]> | null = null;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly connection: ServerConnection,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.disposables.push(
      // a new server is a new measurement (the policy may have changed meanwhile)
      connection.onDidChangeState((s) => {
        if (s.kind === 'running') this.refresh();
      }),
    );
  }

  refresh(): void {
    this.nodes = null;
    this.loading = null;
    this.changed.fire(undefined);
  }

  getTreeItem(node: EffectsNode): vscode.TreeItem {
    const item = new vscode.TreeItem(
      node.label,
      node.children?.length ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None,
    );
    item.description = node.description;
    item.tooltip = node.tooltip;
    return item;
  }

  async getChildren(node?: EffectsNode): Promise<EffectsNode[]> {
    if (node) return node.children ?? [];
    if (this.nodes) return this.nodes;
    this.loading ??= this.load();
    return this.loading;
  }

  private async load(): Promise<EffectsNode[]> {
    try {
      const raw = await this.connection.request(Methods.policyEffects, {});
      this.nodes = effectsTree(raw);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.log.warn(`policyEffects failed: ${message}`);
      this.nodes = [{ label: 'Policy effects are not available', tooltip: message }];
    }
    return this.nodes;
  }

  dispose(): void {
    this.changed.dispose();
    for (const d of this.disposables) d.dispose();
  }
}
