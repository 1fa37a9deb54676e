// Starts what the browser tests talk to: a freshly built `tifeeds serve` on a
// fresh SQLite database, and a local TSV feed server. Both live on loopback
// for the whole run and are stopped by the returned teardown.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { adminAPIKey, adminGraphQL, adminPassword, adminUser, capRows, slowRows, sortRows, tenantName, tenantPassword, tenantUser, tsvRows } from './fixtures';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '../..');

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createNetServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => ok(port));
    });
  });
}

function listen(server: Server): Promise<number> {
  return new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => ok((server.address() as AddressInfo).port));
  });
}

async function waitHealthy(url: string, proc: ChildProcess, logFile: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) break;
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`tifeeds serve did not become healthy at ${url}; its log:\n${readFileSync(logFile, 'utf8')}`);
}

/** createTenantUser creates the e2e tenant through the API and its user with the CLI; it returns the tenant's id. */
async function createTenantUser(url: string, bin: string, db: string, cwd: string, dataDir: string): Promise<string> {
  const { createTenant } = await adminGraphQL<{ createTenant: { id: string } }>(
    url,
    'mutation ($input: TenantInput!) { createTenant(input: $input) { id } }',
    { input: { name: tenantName, contactEmail: 'soc@initech.example' } },
  );
  const created = spawnSync(
    bin,
    ['users', 'create', '--db', db, '--username', tenantUser, '--password', tenantPassword, '--scope', 'tenant', '--tenant', createTenant.id],
    { cwd, encoding: 'utf8', env: { ...process.env, TIFEEDS_DATA_DIR: dataDir } },
  );
  if (created.status !== 0) throw new Error(`tifeeds users create failed: ${created.stderr}`);
  return createTenant.id;
}

/**
 * treeState is what git says of the working tree (status and the content of
 * every change), or null outside a git checkout. The run compares it before
 * and after: a browser test must not change a committed file (the README's
 * screenshots are retaken on purpose by `make screenshots` only).
 */
function treeState(): string | null {
  const git = (...args: string[]) => spawnSync('git', args, { cwd: repoRoot, encoding: 'utf8', maxBuffer: 256 << 20 });
  const status = git('status', '--porcelain=v1', '--untracked-files=all');
  if (status.status !== 0) return null;
  const diff = git('diff', 'HEAD', '--binary', '--no-ext-diff');
  return createHash('sha256').update(status.stdout).update(diff.stdout ?? '').digest('hex') + '\n' + status.stdout;
}

export default async function globalSetup() {
  const treeBefore = process.env.TIFEEDS_SCREENSHOTS ? null : treeState();
  const tmp = mkdtempSync(join(tmpdir(), 'tifeeds-e2e-'));
  const bin = process.env.TIFEEDS_E2E_BIN ?? join(tmp, 'tifeeds');
  if (!process.env.TIFEEDS_E2E_BIN) {
    if (!existsSync(join(here, '../dist/index.html'))) {
      throw new Error('frontend/dist is not built: run `npm run build` first (make test-frontend does)');
    }
    const built = spawnSync('go', ['build', '-o', bin, './cmd/tifeeds'], { cwd: repoRoot, stdio: 'inherit' });
    if (built.status !== 0) throw new Error('go build ./cmd/tifeeds failed');
  }

  // The TSV feed: a plain file on loopback, counting how often it is fetched.
  let fetches = 0;
  // The vendor hosts the feed mirror was asked for (/<host>/<path>), so that
  // a test can tell every built-in feed went through it.
  const mirrored = new Set<string>();
  const tsv = createServer((req, res) => {
    if (req.url === '/__mirror/hosts') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify([...mirrored].sort()));
      return;
    }
    const host = /^\/([a-z0-9.-]+\.[a-z]{2,})\//.exec(req.url ?? '')?.[1];
    if (host) mirrored.add(host);
    if (req.url?.startsWith('/feed.tsv')) {
      fetches++;
      res.writeHead(200, { 'Content-Type': 'text/tab-separated-values; charset=utf-8' });
      res.end(tsvRows.map((r) => r.join('\t')).join('\n') + '\n');
      return;
    }
    if (req.url?.startsWith('/sort.tsv')) {
      fetches++;
      res.writeHead(200, { 'Content-Type': 'text/tab-separated-values; charset=utf-8' });
      res.end(sortRows.map(([type, value, score]) => `${type}\t${value}\tsort_src\t${score}`).join('\n') + '\n');
      return;
    }
    if (req.url?.startsWith('/slow.tsv')) {
      // A feed that takes a few seconds, so a run can be watched in progress.
      fetches++;
      res.writeHead(200, { 'Content-Type': 'text/tab-separated-values; charset=utf-8' });
      let i = 0;
      const timer = setInterval(() => {
        i++;
        res.write(`ip\t198.51.100.${i}\tslow_src\t50\n`);
        if (i === slowRows) {
          clearInterval(timer);
          res.end();
        }
      }, 400);
      req.on('close', () => clearInterval(timer));
      return;
    }
    if (req.url?.startsWith('/cap.tsv')) {
      // More rows than a TSV feed may bring in per day: the run stops at the cap.
      res.writeHead(200, { 'Content-Type': 'text/tab-separated-values; charset=utf-8' });
      const rows: string[] = [];
      for (let i = 0; i < capRows; i++) rows.push(`ip\t11.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}\tcap_src\t50`);
      res.end(rows.join('\n') + '\n');
      return;
    }
    // The feed mirror (TIFEEDS_FEED_MIRROR): the built-in feeds are enabled
    // and run at start; they must never reach the real vendors from a test.
    if (req.url?.startsWith('/openphish.com/feed.txt')) {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('https://phish.example.com/login\n');
      return;
    }
    res.writeHead(404).end('not found');
  });
  const tsvPort = await listen(tsv);

  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const dataDir = join(tmp, 'data');
  mkdirSync(dataDir);
  const logFile = join(tmp, 'serve.log');
  const log = openSync(logFile, 'w');
  const proc = spawn(bin, ['serve', '--addr', `127.0.0.1:${port}`, '--db', `sqlite:${join(tmp, 't.db')}`], {
    cwd: tmp,
    env: {
      ...process.env,
      TIFEEDS_ADMIN_USER: adminUser,
      TIFEEDS_ADMIN_PASSWORD: adminPassword,
      TIFEEDS_ADMIN_API_KEY: adminAPIKey,
      TIFEEDS_DATA_DIR: dataDir,
      TIFEEDS_LOG_LEVEL: 'debug',
      // The test feed server is on loopback, which feeds may not reach by default.
      TIFEEDS_FEED_ALLOW_PRIVATE: 'true',
      TIFEEDS_FEED_MIRROR: `http://127.0.0.1:${tsvPort}`,
      // SAML single sign-on makes its URLs from the public URL (e2e/sso.spec.ts).
      TIFEEDS_PUBLIC_URL: url,
    },
    stdio: ['ignore', log, log],
  });
  await waitHealthy(url, proc, logFile);

  // A tenant-scoped user, for the tests of what each role sees: the tenant
  // through the API, the user with the CLI (no API creates users).
  let tenantId: string;
  try {
    tenantId = await createTenantUser(url, bin, `sqlite:${join(tmp, 't.db')}`, tmp, dataDir);
  } catch (err) {
    proc.kill('SIGTERM');
    tsv.close();
    throw err;
  }

  process.env.TIFEEDS_E2E_URL = url;
  process.env.TIFEEDS_E2E_TSV_URL = `http://127.0.0.1:${tsvPort}/feed.tsv`;
  process.env.TIFEEDS_E2E_TENANT_ID = tenantId;
  process.env.TIFEEDS_E2E_MIRROR_URL = `http://127.0.0.1:${tsvPort}`;
  process.env.TIFEEDS_E2E_LOG = logFile;

  return async () => {
    proc.kill('SIGTERM');
    await new Promise((r) => (proc.exitCode !== null ? r(null) : proc.once('exit', r)));
    await new Promise((r) => tsv.close(r));
    if (process.env.TIFEEDS_E2E_KEEP) {
      console.log(`e2e: kept ${tmp} (TSV fetched ${fetches} times)`);
    } else {
      rmSync(tmp, { recursive: true, force: true });
    }
    if (treeBefore !== null) {
      const treeAfter = treeState();
      if (treeAfter !== null && treeAfter !== treeBefore) {
        throw new Error(
          `the browser tests changed the working tree (git status before:\n${treeBefore.split('\n').slice(1).join('\n') || '(clean)\n'}after:\n` +
            `${treeAfter.split('\n').slice(1).join('\n')}); they must write only under ignored paths such as test-results/`,
        );
      }
    }
  };
}
