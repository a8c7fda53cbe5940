// The test projects, one per package or app that has tests. vitest.config.ts feeds this
// list to `test.projects`. The domain's own tests live in packages/testing, so that
// packages/domain holds nothing that imports more than effect.
export default ["packages/testing", "packages/memory", "packages/api", "apps/server", "apps/worker"]
