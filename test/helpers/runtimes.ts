/**
 * The Node runtimes the proxy must behave the same on: the one running the tests (the oldest the
 * package supports, in CI) and the one the images ship (Node 24, installed once by
 * scripts/install-node.sh from an npm package). Node's HTTP writer differs between them (Node 24
 * buffers corked chunks itself), so stream framing is proven on both.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

export interface Runtime {
  readonly name: string;
  /** Path of the node binary. */
  readonly node: string;
}

const ROOT = path.resolve(__dirname, '../..');
let image: Runtime | undefined;

/** The Node of the images (downloads its npm package once; about 50 MB). */
export function imageRuntime(): Runtime {
  if (image !== undefined) return image;
  const node = execFileSync('bash', [path.join(ROOT, 'scripts/install-node.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  return (image = { name: `node ${version} (the images')`, node });
}

export function runtimes(): Runtime[] {
  const here: Runtime = { name: `node ${process.version} (the tests')`, node: process.execPath };
  const img = imageRuntime();
  return img.node === here.node ? [here] : [here, img];
}
