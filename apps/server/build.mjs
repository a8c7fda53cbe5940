/**
 * `pnpm start` runs compiled JavaScript, not TypeScript through tsx (docs/performance.md, The
 * request path): this builds `dist/` from `src/main.ts` with esbuild, in well
 * under a second. The workspace's packages (`@intake/*`) go into one bundle; every other
 * package stays its own module, imported from the file Node would load, so there is one
 * copy of each (one `effect`). `dist/main.js` imports gc-tuning before the bundle, as
 * `src/main.ts` imports it before anything else, then turns on source maps, so stack traces
 * name the TypeScript sources (as they did under tsx) without a flag for Node.
 *
 *   node build.mjs [OUTDIR]   (`pnpm start` builds into dist/; the tests, through
 *                             test/global-setup.ts, into a folder of their own under dist/)
 */
import { randomBytes } from "node:crypto"
import { mkdir, rename, writeFile } from "node:fs/promises"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { build } from "esbuild"

const serverDir = dirname(fileURLToPath(import.meta.url))

/** Bundles the workspace's own code; leaves installed packages to Node, at their resolved file. */
const installedPackagesStayExternal = {
  name: "installed-packages-stay-external",
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.pluginData === "resolving" || args.path.startsWith("@intake/")) return undefined
      if (args.path.startsWith("node:")) return { path: args.path, external: true }
      const resolved = await build.resolve(args.path, {
        importer: args.importer,
        kind: args.kind,
        resolveDir: args.resolveDir,
        pluginData: "resolving"
      })
      if (resolved.errors.length > 0) return { errors: resolved.errors }
      // As a file: URL, so that no character of the checkout's path is read as URL syntax.
      return resolved.path.includes("/node_modules/")
        ? { path: pathToFileURL(resolved.path).href, external: true }
        : undefined
    })
  }
}

/**
 * Writes `contents` to `path` whole or not at all (a file beside it, then renamed over it): a
 * second `pnpm start` building in the same checkout never leaves a half-written module for
 * the first to load.
 */
const publish = async (path, contents) => {
  await mkdir(dirname(path), { recursive: true })
  const partial = `${path}.${process.pid}-${randomBytes(4).toString("hex")}.partial`
  await writeFile(partial, contents)
  await rename(partial, path)
}

const buildServer = async (outdir = join(serverDir, "dist")) => {
  const { outputFiles } = await build({
    absWorkingDir: serverDir,
    entryPoints: { server: "src/main.ts", "gc-tuning": "@intake/node/gc-tuning" },
    outdir,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    // A module imported on demand (the model summarizer, with @effect/ai-openai and its
    // tokenizer) stays a chunk of its own, loaded only when asked for (docs/performance.md).
    splitting: true,
    chunkNames: "chunks/[name]-[hash]",
    sourcemap: "linked",
    plugins: [installedPackagesStayExternal],
    logLevel: "warning",
    write: false
  })
  // The modules others import first, the entry last.
  const imported = outputFiles.filter((file) => file.path.includes("/chunks/"))
  for (const file of [...imported, ...outputFiles.filter((file) => !imported.includes(file))])
    await publish(file.path, file.contents)
  // Only modules loaded after source maps are turned on get theirs: before the bundle.
  await publish(join(outdir, "source-maps.js"), "process.setSourceMapsEnabled(true)\n")
  // Static imports run in order: V8's flag is set before the server's modules load.
  await publish(
    join(outdir, "main.js"),
    'import "./gc-tuning.js"\nimport "./source-maps.js"\nimport "./server.js"\n'
  )
  return join(outdir, "main.js")
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildServer(process.argv[2])
