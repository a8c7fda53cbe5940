/**
 * The embedding API of @intake/memory (docs/embedding.md): every storage port on one
 * in-memory database, and what stays in a process beside a database. The single adapters
 * (for tests that mix them) are under "@intake/memory/internal", outside semantic versioning.
 */
export * from "./runtime.js"
