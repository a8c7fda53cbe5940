/**
 * @intake/client as an integrator uses it: built with tsc to dist/, imported by path from a
 * program in a directory outside the workspace, type-checked there with `strict` (no casts),
 * and run against `pnpm start`'s server through a proxy that loses one answer and answers
 * one request 429 with Retry-After.
 */
import { execFile } from "node:child_process"
import { readFileSync, writeFileSync } from "node:fs"
import { createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http"
import { join } from "node:path"
import { promisify } from "node:util"
import { expect, it } from "@effect/vitest"
import { temporaryDirectory } from "@intake/testing"
import { Effect } from "effect"
import { environment, startServer } from "./process.js"

const run = promisify(execFile)
const root = join(import.meta.dirname, "..", "..", "..")
const clientDir = join(root, "packages", "client")
const tsc = join(root, "node_modules", ".bin", "tsc")

interface Seen {
  readonly method: string
  readonly path: string
  readonly at: number
  readonly idempotencyKey: string | undefined
  readonly status: number
  readonly replayed: string | undefined
  readonly fault: "lost" | "429" | undefined
}

/** Forwards to the server; loses the answer to the first POST of a submission, answers the first webhooks list 429. */
const faultyProxy = (target: URL) => {
  const seen: Array<Seen> = []
  let lostOne = false
  let limitedOne = false
  const server: Server = createServer((incoming: IncomingMessage, outgoing) => {
    const path = incoming.url ?? "/"
    const at = Date.now()
    const idempotencyKey = incoming.headers["idempotency-key"]
    const key = typeof idempotencyKey === "string" ? idempotencyKey : undefined
    if (!limitedOne && incoming.method === "GET" && path === "/v1/webhooks") {
      limitedOne = true
      seen.push({
        method: "GET",
        path,
        at,
        idempotencyKey: key,
        status: 429,
        replayed: undefined,
        fault: "429"
      })
      incoming.resume()
      outgoing.writeHead(429, { "content-type": "application/json", "retry-after": "1" }).end(
        JSON.stringify({
          success: false,
          error: {
            code: "rate_limit_exceeded",
            message: "Rate limit of 60 requests per minute exceeded.",
            details: { retry_after: 1 }
          }
        })
      )
      return
    }
    const lose = !lostOne && incoming.method === "POST" && path.endsWith("/submissions")
    if (lose) lostOne = true
    const upstream = httpRequest(
      { host: target.hostname, port: target.port, method: incoming.method, path, headers: incoming.headers },
      (answer) => {
        const chunks: Array<Buffer> = []
        answer.on("data", (chunk: Buffer) => chunks.push(chunk))
        answer.on("end", () => {
          const replayed = answer.headers["idempotent-replayed"]
          seen.push({
            method: incoming.method ?? "",
            path,
            at,
            idempotencyKey: key,
            status: answer.statusCode ?? 0,
            replayed: typeof replayed === "string" ? replayed : undefined,
            fault: lose ? "lost" : undefined
          })
          // The server did the work; the client never hears of it (a reset connection).
          if (lose) return outgoing.socket?.destroy()
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers).end(Buffer.concat(chunks))
        })
      }
    )
    incoming.pipe(upstream)
  })
  return Effect.acquireRelease(
    Effect.promise(
      () =>
        new Promise<{ url: string; seen: Array<Seen> }>((resolve) =>
          server.listen(0, "127.0.0.1", () => {
            const address = server.address()
            const port = typeof address === "object" && address !== null ? address.port : 0
            resolve({ url: `http://127.0.0.1:${port}`, seen })
          })
        )
    ),
    () =>
      Effect.sync(() => server.closeAllConnections()).pipe(Effect.andThen(Effect.sync(() => server.close())))
  )
}

const programDir = temporaryDirectory("intake-client-user-")

it.live(
  "builds, type-checks strictly outside the workspace, and lists, paginates, retries, waits out a 429 and verifies webhooks",
  () =>
    Effect.gen(function* () {
      const dir = yield* programDir
      // The package's build (tsc, tsconfig.build.json), into a folder of this test's own: the
      // README test builds packages/client/dist at the same time.
      const built = join(dir, "intake-client-dist")
      yield* Effect.promise(() =>
        run(tsc, ["-p", join(clientDir, "tsconfig.build.json"), "--outDir", built], { cwd: clientDir })
      )
      const source = readFileSync(join(import.meta.dirname, "client-program.txt"), "utf8").replace(
        "CLIENT_PATH",
        join(built, "index.js")
      )
      // No cast anywhere: the types the client gives are the ones the program needs.
      const code = source.replace(/\/\/.*$/gm, "")
      expect(code).not.toMatch(/\bas\s+(?!const\b)[A-Za-z{[]/)
      expect(code).not.toMatch(/<[A-Z]\w*>\s*\w/)
      writeFileSync(join(dir, "program.ts"), source)
      writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module", private: true }))
      writeFileSync(
        join(dir, "tsconfig.json"),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            target: "ES2022",
            module: "NodeNext",
            moduleResolution: "NodeNext",
            outDir: "out",
            typeRoots: [join(root, "node_modules", "@types")],
            types: ["node"]
          },
          files: ["program.ts"]
        })
      )
      const compiled = yield* Effect.promise(() =>
        run(tsc, ["-p", dir], { cwd: dir }).then(
          () => "",
          (error: { stdout?: string }) => error.stdout ?? String(error)
        )
      )
      expect(compiled).toBe("")

      const server = yield* startServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true" })
      expect(server.demoKey).toBeDefined()
      const proxy = yield* faultyProxy(new URL(server.baseUrl))
      const { stdout } = yield* Effect.promise(() =>
        run(process.execPath, [join(dir, "out", "program.js")], {
          cwd: dir,
          env: environment({ INTAKE_URL: proxy.url, INTAKE_KEY: server.demoKey ?? "" }),
          timeout: 60_000
        })
      )
      const result = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}")
      expect(result.notFound).toBe("intake_bot")
      expect(new Set(result.created).size).toBe(3)
      expect(result.listedAll).toBe(true)
      expect(result.listedCount).toBe(3)
      expect(result.pages).toBe(2)
      // The lost create was retried with the same key and replayed: one submission, not two.
      const creates = proxy.seen.filter(
        (request) => request.method === "POST" && request.path.endsWith("/submissions")
      )
      const [lost, retried] = creates
      expect(lost?.fault).toBe("lost")
      expect(lost?.status).toBe(201)
      expect(retried?.idempotencyKey).toBe(lost?.idempotencyKey)
      expect(retried?.replayed).toBe("true")
      expect(new Set(creates.map((request) => request.idempotencyKey)).size).toBe(4)
      // The 429 was waited out for its Retry-After, then the list answered.
      const lists = proxy.seen.filter(
        (request) => request.method === "GET" && request.path === "/v1/webhooks"
      )
      expect(lists.map((request) => request.status)).toEqual([429, 200])
      expect(lists[1]!.at - lists[0]!.at).toBeGreaterThanOrEqual(1_000)
      expect(result.rateLimitedMs).toBeGreaterThanOrEqual(1_000)
      expect(result.webhooksBefore).toBe(0)
      expect(result.seen).toEqual(["submission.completed true Contact form", "webhook.test true"])
      expect(result.rejected).toEqual(["WebhookVerificationError"])
    }).pipe(Effect.scoped),
  120_000
)
