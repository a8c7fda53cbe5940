/** The HTTP server as a layer: the app on a node:http server, per-request tracing off. */
import { createServer } from "node:http"
import { HttpMiddleware, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Layer } from "effect"
import { type AppOptions, makeApp } from "./app.js"

export interface ListenOptions extends AppOptions {
  /** 0 picks a free port (tests). */
  readonly port: number
  readonly host?: string
}

/**
 * Serves the app. Needs the use cases and the Crypto port (the services of
 * handlers-v1.ts and handlers-admin.ts); provides the HttpServer, whose `address` tells the port.
 */
export const serverLayer = (options: ListenOptions) =>
  HttpServer.serve(makeApp(options)).pipe(
    // Per-request spans cost a measurable share of throughput and nobody reads them here.
    HttpMiddleware.withTracerDisabledWhen(() => true),
    Layer.provideMerge(
      NodeHttpServer.layer(createServer, {
        port: options.port,
        ...(options.host === undefined ? {} : { host: options.host })
      })
    )
  )

export const serverPort = (server: HttpServer.HttpServer): number =>
  server.address._tag === "TcpAddress" ? server.address.port : 0
