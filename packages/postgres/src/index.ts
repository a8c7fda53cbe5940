/**
 * The embedding API of @intake/postgres (docs/embedding.md): the ports on PostgreSQL or
 * PGlite, their database client layers, the migrations and the database checks. The
 * repositories behind the ports are not exported: they change with the schema.
 */

export * from "./config.js"
export * from "./database-status.js"
export * from "./migrations.js"
export * from "./migrator.js"
export * from "./pg-pool.js"
export * from "./pglite-client.js"
export * from "./runtime.js"
