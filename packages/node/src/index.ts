/**
 * The embedding API of @intake/node (docs/embedding.md): the platform a host provides to
 * the domain (crypto, ids, the address resolver), the webhook receiver client and the
 * logging layer. The request log and fiber helpers of the HTTP server's hot path are under
 * "@intake/node/internal", outside semantic versioning.
 */
export { jsonLineLogger, LOG_LEVELS, type LogLevelName, loggingLayer, logLevelConfig } from "./logging.js"
export * from "./metrics.js"
export * from "./platform.js"
export * from "./receiver-client.js"
export * from "./tracing-config.js"
