/**
 * What reading the raw files behind an answer would cost, for the token meter when the
 * server does not report `rawTokens` itself: the distinct workspace files the answer points
 * at (its cards' files and their callers', callees' and tests' files; DESIGN.md baseline (a)),
 * each estimated like the server's budgets, ceil(bytes / 4).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { isRecord } from './protocol';

export interface RawCost {
  tokens: number;
  files: number;
}

const MAX_DEPTH = 8;
const MAX_FILES = 500;

/** Workspace-relative or absolute file paths named by `path` fields anywhere in the answer. */
export function referencedPaths(value: unknown): string[] {
  const out = new Set<string>();
  const walk = (v: unknown, depth: number): void => {
    if (depth > MAX_DEPTH || out.size >= MAX_FILES) return;
    if (Array.isArray(v)) {
      for (const item of v) walk(item, depth + 1);
    } else if (isRecord(v)) {
      for (const [key, child] of Object.entries(v)) {
        if (key === 'provenance') continue;
        if (key === 'path' && typeof child === 'string' && child) out.add(child);
        else walk(child, depth + 1);
      }
    }
  };
  walk(value, 0);
  return [...out];
}

/**
 * Sum ceil(size / 4) over the referenced files that exist inside `root`; null when the
 * answer names no readable file (the meter then says the cost is unknown).
 */
export function estimateRawCost(value: unknown, root: string, statSize: (p: string) => number | null = fileSize): RawCost | null {
  const base = path.resolve(root);
  let tokens = 0;
  let files = 0;
  for (const p of referencedPaths(value)) {
    const abs = path.resolve(base, p.startsWith('file://') ? decodeURIComponent(p.slice('file://'.length)) : p);
    if (abs !== base && !abs.startsWith(base + path.sep)) continue;
    const size = statSize(abs);
    if (size === null) continue;
    tokens += Math.ceil(size / 4);
    files += 1;
  }
  return files > 0 ? { tokens, files } : null;
}

function fileSize(p: string): number | null {
  try {
    const st = fs.statSync(p);
    return st.isFile() ? st.size : null;
  } catch {
    return null;
  }
}
