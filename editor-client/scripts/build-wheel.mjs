// Builds the server wheel (codesynapse-*.whl) from this repository into dist/server/, where
// the packaged extension finds it: "CodeSynapse: Install Server" installs it into the chosen
// interpreter with pip, so a new user needs neither a published package nor a checkout.
// Interpreter: CODESYNAPSE_PYTHON, else <repo>/.venv/bin/python, else python3.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const clientDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const repoDir = path.resolve(clientDir, '..');
const out = path.join(clientDir, 'dist', 'server');
const venv = path.join(repoDir, '.venv', 'bin', 'python');
const python = process.env.CODESYNAPSE_PYTHON ?? (fs.existsSync(venv) ? venv : 'python3');

fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(out, { recursive: true });
execFileSync(python, ['-m', 'pip', 'wheel', '--quiet', '--no-deps', '--wheel-dir', out, repoDir], { stdio: 'inherit' });
const wheels = fs.readdirSync(out).filter((n) => /^codesynapse-.+\.whl$/.test(n));
if (wheels.length !== 1) throw new Error(`expected one codesynapse wheel in ${out}, found: ${wheels.join(', ') || 'none'}`);
console.log(`server wheel: ${path.relative(clientDir, path.join(out, wheels[0]))}`);
