/**
 * The rings of the hexagon, checked by `pnpm boundaries` (part of `pnpm lint`, so CI
 * fails on a break). Inner to outer:
 *
 *   domain  <-  adapters (memory, postgres, redis, node)  <-  delivery  <-  api  <-  apps (server, worker)
 *
 * A ring imports only rings inside it; adapters do not import each other; apps do not
 * import each other. Test helpers (packages/testing, and each adapter's src/testing.ts,
 * exported as `@intake/<adapter>/testing`) are imported by test files only. Test files
 * may compose adapters (a rule test runs on the memory adapters) but never import an app
 * other than their own.
 */

/** Test files and what only they use: test folders, the projects' vitest.config.ts, packages/testing, adapters' src/testing.ts (and redis's testing-cluster.ts), the benchmarks. */
const TEST_ONLY =
  "(^(packages|apps)/[^/]+/test/)|(^(packages|apps)/[^/]+/vitest\\.config\\.ts$)|(^packages/testing/)|(^packages/[^/]+/src/testing(-cluster|-pgbouncer)?\\.ts$)|(^bench/)"
const ADAPTERS = "^packages/(memory|postgres|redis|node)/"
/** An npm package: its resolved path ends in node_modules/<name>/ (in pnpm's store or a plain folder). */
const npm = (names) => `(^|/)node_modules/(${names})/`

module.exports = {
  forbidden: [
    {
      name: "effect-platform-by-module",
      comment:
        "@effect/platform and @effect/platform-node are imported module by module (@effect/platform/HttpApi): their index loads every module, the Scalar and Swagger browser bundles included (docs/performance.md, Memory and garbage collection).",
      severity: "error",
      from: { pathNot: TEST_ONLY },
      to: { path: "(^|/)node_modules/@effect/platform(-node)?/dist/[^/]+/index\\.(js|d\\.ts)$" }
    },
    {
      name: "model-summarizer-loaded-when-configured",
      comment:
        "The model summarizer (and the AI packages it brings) is imported dynamically, only when INTAKE_SUMMARIZER=openai asks for it.",
      severity: "error",
      from: { pathNot: [TEST_ONLY, "^packages/node/src/model-summarizer\\.ts$"] },
      to: { path: "^packages/node/src/model-summarizer\\.ts$", dynamic: false }
    },
    {
      name: "tracing-loaded-when-configured",
      comment:
        "The OTLP exporter (and @effect/opentelemetry) is imported dynamically, only when OTEL_EXPORTER_OTLP_ENDPOINT asks for traces (docs/operations.md, Traces).",
      severity: "error",
      from: { pathNot: [TEST_ONLY, "^packages/node/src/tracing\\.ts$"] },
      to: { path: "^packages/node/src/tracing\\.ts$", dynamic: false }
    },
    {
      name: "domain-imports-only-effect",
      comment:
        "packages/domain holds the rules and the ports: it imports effect and its own files, nothing else, and holds no tests (its rule tests run on the memory adapters, in packages/memory/test/domain).",
      severity: "error",
      from: { path: "^packages/domain/" },
      to: { pathNot: [`^packages/domain/src/`, npm("effect")] }
    },
    {
      name: "domain-areas-in-order",
      comment:
        "The domain's areas import one way, shared <- access <- webhooks <- summaries <- submissions; a use case may read any area's ports (docs/architecture.md, The domain's layout).",
      severity: "error",
      from: { path: "^packages/domain/src/shared/" },
      to: { path: "^packages/domain/src/(access|webhooks|summaries|submissions)/", pathNot: "/ports\\.ts$" }
    },
    {
      name: "domain-areas-in-order",
      comment:
        "The domain's areas import one way, shared <- access <- webhooks <- summaries <- submissions; a use case may read any area's ports (docs/architecture.md, The domain's layout).",
      severity: "error",
      from: { path: "^packages/domain/src/access/" },
      to: { path: "^packages/domain/src/(webhooks|summaries|submissions)/", pathNot: "/ports\\.ts$" }
    },
    {
      name: "domain-areas-in-order",
      comment:
        "The domain's areas import one way, shared <- access <- webhooks <- summaries <- submissions; a use case may read any area's ports (docs/architecture.md, The domain's layout).",
      severity: "error",
      from: { path: "^packages/domain/src/webhooks/" },
      to: { path: "^packages/domain/src/(summaries|submissions)/", pathNot: "/ports\\.ts$" }
    },
    {
      name: "domain-areas-in-order",
      comment:
        "The domain's areas import one way, shared <- access <- webhooks <- summaries <- submissions; a use case may read any area's ports (docs/architecture.md, The domain's layout).",
      severity: "error",
      from: { path: "^packages/domain/src/summaries/" },
      to: { path: "^packages/domain/src/(submissions)/", pathNot: "/ports\\.ts$" }
    },
    {
      name: "adapters-do-not-import-adapters",
      comment:
        "memory, postgres, redis and node sit side by side: each implements ports of the domain; the composition root combines them.",
      severity: "error",
      from: { path: `${ADAPTERS}src/`, pathNot: "/src/testing\\.ts$" },
      to: { path: ADAPTERS, pathNot: "^packages/$1/" }
    },
    {
      name: "adapters-do-not-import-outer-rings",
      comment: "An adapter imports the domain only: not delivery, api or an app.",
      severity: "error",
      from: { path: `${ADAPTERS}src/` },
      to: { path: "^(packages/(delivery|api|client)/|apps/)" }
    },
    {
      name: "delivery-does-not-import-outer-rings",
      comment: "The delivery runtime runs on the domain and the adapters; api and the apps are outside it.",
      severity: "error",
      from: { path: "^packages/delivery/src/" },
      to: { path: "^(packages/(api|client)/|apps/)" }
    },
    {
      name: "api-imports-only-domain-and-effect",
      comment:
        "packages/api is the HTTP contract: the domain, effect and @effect/platform, nothing of the adapters.",
      severity: "error",
      from: { path: "^packages/api/src/" },
      to: { pathNot: ["^packages/(api|domain)/src/", npm("effect|@effect/platform")] }
    },
    {
      name: "client-stands-alone",
      comment: "packages/client is published on its own: global fetch, no workspace package at run time.",
      severity: "error",
      from: { path: "^packages/client/src/" },
      to: { path: "^(packages|apps)/", pathNot: "^packages/client/" }
    },
    {
      name: "packages-do-not-import-apps",
      comment: "The apps are composition roots; nothing a package holds (tests included) depends on one.",
      severity: "error",
      from: { path: "^packages/" },
      to: { path: "^apps/" }
    },
    {
      name: "apps-do-not-import-apps",
      comment: "What two apps share belongs in a package.",
      severity: "error",
      from: { path: "^apps/([^/]+)/" },
      to: { path: "^apps/", pathNot: "^apps/$1/" }
    },
    {
      name: "test-helpers-only-in-tests",
      comment:
        "packages/testing and the adapters' src/testing.ts (@intake/<adapter>/testing) are for test files; production code never loads them.",
      severity: "error",
      from: { pathNot: TEST_ONLY },
      to: { path: "(^packages/testing/)|(^packages/[^/]+/src/testing(-cluster|-pgbouncer)?\\.ts$)" }
    },
    {
      name: "no-circular",
      comment:
        "No module reaches itself through its imports, type-only imports included: a cycle means a shared type or helper belongs in a module of its own that both import.",
      severity: "error",
      from: {},
      to: { circular: true }
    },
    {
      name: "imports-resolve",
      comment: "An import the check cannot resolve would escape every rule above.",
      severity: "error",
      from: {},
      to: { couldNotResolve: true }
    }
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    // Our own build output and data folders; an npm package's dist stays visible, so rules can name its modules.
    exclude: { path: ["^(packages|apps)/[^/]+/(dist|\\.data)/", "^(dist|\\.data)/"] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".js", ".json"]
    },
    reporterOptions: { text: { highlightFocused: true } }
  }
}
