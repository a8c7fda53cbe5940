// The test projects, one per package or app that has tests. vitest.config.ts feeds this
// list to `test.projects`. packages/domain has none (it imports effect only, tests
// included): its rule tests run on the memory adapters, in packages/memory/test/domain.
// packages/testing has none either: it holds the contract suites and fixtures the others'
// tests import.
// A project's files share their worker's modules (`sharedModules`, docs/testing.md).
import { sharedModules } from "./packages/testing/src/vitest-shared-modules.js"

export default [
  "packages/memory",
  "packages/node",
  "packages/postgres",
  "packages/redis",
  "packages/delivery",
  "packages/api",
  "packages/client",
  "apps/server",
  "apps/worker",
  // examples/embedded-service on the packed packages, installed with npm outside the
  // workspace: the build, the packs and the install take tens of seconds.
  {
    test: {
      name: "embedding",
      root: "./examples",
      include: ["test/**/*.test.ts"],
      testTimeout: 120_000,
      hookTimeout: 180_000
    }
  },
  // The server's HTTP tests again, with the server on PostgreSQL (a fresh database per test
  // layer) and on the embedded default, PGlite (in memory).
  {
    test: {
      name: "server-postgres",
      root: "./apps/server",
      include: [
        "test/{auth,requests,resources,webhooks,deliveries,summaries,hostile-input,idempotent-sends,plan-changes,recovery,webhook-operations,logs,metrics}.test.ts"
      ],
      env: { INTAKE_SERVER_TEST_STORE: "postgres" },
      globalSetup: ["test/global-setup.ts"],
      testTimeout: 60_000,
      hookTimeout: 60_000,
      ...sharedModules
    }
  },
  {
    test: {
      name: "server-pglite",
      root: "./apps/server",
      include: [
        "test/{auth,requests,resources,webhooks,deliveries,hostile-input,idempotent-sends,plan-changes,recovery,webhook-operations}.test.ts"
      ],
      env: { INTAKE_SERVER_TEST_STORE: "pglite" },
      globalSetup: ["test/global-setup.ts"],
      testTimeout: 60_000,
      hookTimeout: 60_000,
      ...sharedModules
    }
  }
]
