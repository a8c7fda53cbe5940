/**
 * The receivers of the guide "Verify a delivery" (docs/guides/verify-webhooks.md), run as a
 * reader would run them, against real deliveries of this server: each one's snippet file in
 * docs/guides/verify is the text the guide page shows, so what is tested is what is taught.
 * A relay on 127.0.0.1 stands between the server and each receiver: it passes each delivery
 * on byte for byte and keeps it, so the test can send it again, altered.
 */
import { execFile, execFileSync, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { promisify } from "node:util"
import { expect, layer } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import { BaseUrl, call } from "./harness.js"
import { freePort, stopped } from "./process.js"
import { eventually } from "./receiver.js"
import { dataOf, provision, realServer } from "./support.js"

const verifyDir = join(import.meta.dirname, "..", "..", "..", "docs", "guides", "verify")

/**
 * Runs a tool in docs/guides/verify without blocking the event loop: the server under test
 * runs in this process, and a loop held for seconds lets its keep-alive timers and the
 * client's fire together, resetting the next request's connection.
 */
const runInVerifyDir = (command: string, args: ReadonlyArray<string>, env?: NodeJS.ProcessEnv) =>
  Effect.promise(() =>
    promisify(execFile)(command, [...args], { cwd: verifyDir, ...(env === undefined ? {} : { env }) })
  )

/** What a relay passed on: the delivery as the server sent it, and the receiver's status. */
interface Relayed {
  readonly headers: IncomingHttpHeaders
  readonly body: Buffer
  readonly status: number
}

/** Sends a request to `url` with the delivery's signature headers and `body`; the status. */
const post = async (url: string, headers: IncomingHttpHeaders, body: Buffer | string) => {
  const signature: Record<string, string> = { "content-type": "application/json" }
  for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
    const value = headers[name]
    if (typeof value === "string") signature[name] = value
  }
  const response = await fetch(url, { method: "POST", headers: signature, body })
  await response.arrayBuffer()
  return response.status
}

/** A local HTTP server for the scope, answering with `handle`; its base URL. */
const localServer = (handle: (path: string, headers: IncomingHttpHeaders, body: Buffer) => Promise<number>) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly close: () => void }>((resume) => {
      const server = createServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          handle(request.url ?? "/", request.headers, Buffer.concat(chunks)).then(
            (status) => response.writeHead(status).end(),
            () => response.writeHead(502).end()
          )
        })
      })
      server.listen(0, "127.0.0.1", () =>
        resume(
          Effect.succeed({
            url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
            close: () => {
              server.closeAllConnections()
              server.close()
            }
          })
        )
      )
    }),
    (server) => Effect.sync(server.close)
  )

/** A relay: every delivery passed on to `target.url` (set once the receiver runs) and kept. */
const relay = Effect.gen(function* () {
  const relayed: Array<Relayed> = []
  const target = { url: "" }
  const server = yield* localServer(async (path, headers, body) => {
    const status = await post(`${target.url}${path}`, headers, body)
    relayed.push({ headers, body, status })
    return status
  })
  return { url: `${server.url}/webhooks/intake`, relayed, target }
})

/**
 * Waits until the receiver at `url` answers, and returns its first answer to a request
 * without a signature (a receiver must refuse it: 401).
 */
const firstAnswerUnsigned = (url: string, output: () => string) =>
  Effect.promise(async () => {
    const deadline = Date.now() + 20_000
    for (;;) {
      try {
        return await post(url, {}, "{}")
      } catch (error) {
        if (Date.now() > deadline)
          throw new Error(`the receiver did not start: ${output()}`, { cause: error })
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
  })

/** A receiver of the guide, started with its endpoint's secret: its base URL and what it printed. */
interface Receiver {
  readonly name: string
  readonly start: (
    secret: string
  ) => Effect.Effect<
    { readonly url: string; readonly printed: (() => string) | undefined },
    never,
    Scope.Scope
  >
}

/**
 * A snippet run as the guide says (`WEBHOOK_SECRET`, `PORT`), stopped with the scope. Ready
 * once it answers; its first answer, to a request without a signature, must be 401.
 */
const processReceiver = (
  name: string,
  command: string,
  args: ReadonlyArray<string> | ((port: number) => ReadonlyArray<string>)
): Receiver => ({
  name,
  start: (secret) =>
    Effect.gen(function* () {
      const port = yield* freePort
      const output = { stdout: "", stderr: "" }
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          const child = spawn(command, typeof args === "function" ? args(port) : args, {
            cwd: verifyDir,
            // No __pycache__ left in docs/guides/verify by a test run.
            env: { ...process.env, WEBHOOK_SECRET: secret, PORT: String(port), PYTHONDONTWRITEBYTECODE: "1" }
          })
          child.stdout.on("data", (chunk: Buffer) => {
            output.stdout += chunk.toString("utf8")
          })
          child.stderr.on("data", (chunk: Buffer) => {
            output.stderr += chunk.toString("utf8")
          })
          return child
        }),
        stopped
      )
      const url = `http://127.0.0.1:${port}`
      const unsigned = yield* firstAnswerUnsigned(
        `${url}/webhooks/intake`,
        () => output.stderr + output.stdout
      )
      expect(unsigned, `${name}: a request without a signature`).toBe(401)
      return { url, printed: () => output.stdout }
    })
})

/**
 * The Next.js route handler, called with a Web `Request` made from each delivery (Next.js
 * itself is not a dependency: what runs is the handler the guide shows).
 */
const nextRouteHandler: Receiver = {
  name: "Next.js route handler",
  start: (secret) =>
    Effect.gen(function* () {
      const { POST } = (yield* Effect.promise(
        () => import(pathToFileURL(join(verifyDir, "next-route.mjs")).href)
      )) as { POST: (request: Request) => Promise<Response> }
      // The handler reads its secret from the environment, as a Next.js app does.
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          const before = process.env.WEBHOOK_SECRET
          process.env.WEBHOOK_SECRET = secret
          return before
        }),
        (before) =>
          Effect.sync(() => {
            if (before === undefined) delete process.env.WEBHOOK_SECRET
            else process.env.WEBHOOK_SECRET = before
          })
      )
      const server = yield* localServer(async (path, headers, body) => {
        const request = new Request(`http://127.0.0.1${path}`, {
          method: "POST",
          headers: Object.entries(headers).flatMap(([name, value]) =>
            typeof value === "string" ? [[name, value] as [string, string]] : []
          ),
          body
        })
        return (await POST(request)).status
      })
      return { url: server.url, printed: undefined }
    })
}

/**
 * One endpoint per receiver (through a relay), one submission, and then for each: the real
 * delivery verified (204, the receiver printed its event, the delivery log says
 * succeeded), the same delivery sent again verified, and with one word of its body
 * altered refused (401). Then the endpoints' secrets are rotated and a second submission's
 * deliveries, signed by both secrets, verify with the old one.
 */
const deliverToEach = (receivers: ReadonlyArray<Receiver>) =>
  Effect.gen(function* () {
    const baseUrl = yield* BaseUrl
    const tenant = yield* provision(baseUrl)
    const setups = yield* Effect.forEach(
      receivers,
      (receiver) =>
        Effect.gen(function* () {
          const relayed = yield* relay
          const webhook = dataOf(
            yield* call(baseUrl, "POST", "/v1/webhooks", {
              key: tenant.key,
              body: { url: relayed.url, events: ["submission.completed"] }
            })
          ).webhook as { id: string; secret: string }
          const started = yield* receiver.start(webhook.secret)
          relayed.target.url = started.url
          return { receiver, webhookId: webhook.id, relayed: relayed.relayed, started }
        }),
      { concurrency: "unbounded" }
    )
    /** A submission by `name`; waits until every receiver has had its `count`th delivery. */
    const submitAndWait = (name: string, count: number) =>
      Effect.gen(function* () {
        const submission = dataOf(
          yield* call(baseUrl, "POST", `/v1/intake-bots/${tenant.botId}/submissions`, {
            key: tenant.key,
            body: { data: { name, email: "ada@example.com", message: "Hello from the guide" } }
          }),
          201
        ).submission
        yield* eventually(() => setups.every((setup) => setup.relayed.length >= count), 20_000)
        return setups.map((setup) => {
          const delivery = setup.relayed[count - 1]!
          const event = JSON.parse(delivery.body.toString("utf8"))
          expect(event).toMatchObject({
            type: "submission.completed",
            data: { submission: { id: submission.id } }
          })
          expect(delivery.status, `${setup.receiver.name}: delivery ${count}`).toBe(204)
          const printed = setup.started.printed
          if (printed !== undefined) {
            expect(printed(), setup.receiver.name).toContain(`verified ${event.id} submission.completed`)
          }
          return { ...setup, delivery }
        })
      })

    for (const { receiver, webhookId, delivery, started } of yield* submitAndWait("Ada Lovelace", 1)) {
      const name = receiver.name
      // The attempt is written down just after the receiver answered (batched with others).
      const readLog = () =>
        Effect.map(
          call(baseUrl, "GET", `/v1/webhooks/${webhookId}/deliveries`, { key: tenant.key }),
          (answer) => dataOf(answer).deliveries as Array<{ status: string }>
        )
      let log = yield* readLog()
      for (let tries = 0; tries < 100 && log[0]?.status === "pending"; tries++) {
        yield* Effect.sleep("20 millis")
        log = yield* readLog()
      }
      expect(log, name).toMatchObject([{ status: "succeeded", response_status: 204 }])
      const url = `${started.url}/webhooks/intake`
      expect(
        yield* Effect.promise(() => post(url, delivery.headers, delivery.body)),
        `${name}: sent again`
      ).toBe(204)
      const altered = Buffer.from(delivery.body.toString("utf8").replace("Ada Lovelace", "Eve Lovelace"))
      expect(altered.equals(delivery.body)).toBe(false)
      expect(yield* Effect.promise(() => post(url, delivery.headers, altered)), `${name}: altered`).toBe(401)
    }

    // A rotation while the receivers still hold the old secret: for its grace period each
    // delivery carries the new secret's signature, then the old one's, and verifies
    // (docs/guides/secret-rotation.md).
    for (const { webhookId } of setups) {
      dataOf(yield* call(baseUrl, "POST", `/v1/webhooks/${webhookId}/secret/rotate`, { key: tenant.key }))
    }
    for (const { receiver, delivery } of yield* submitAndWait("Grace Hopper", 2)) {
      expect(String(delivery.headers["webhook-signature"]).split(" "), receiver.name).toHaveLength(2)
    }
  })

/** Under CI every receiver runs: a missing framework or toolchain fails its test (.ci/run installs them). */
const underCi = process.env.CI === "true"

/**
 * The first Python that has `modules`, and their versions: python3 on the PATH, else the
 * system's. A python3 on the PATH may be another interpreter (pyenv, a virtualenv) that does
 * not see the Debian packages .ci/run installs.
 */
const pythonWith = (modules: ReadonlyArray<string>) => {
  const probe = [
    "import importlib.metadata, importlib.util, sys",
    "if any(importlib.util.find_spec(m) is None for m in sys.argv[1:]): sys.exit(1)",
    "print(', '.join(m + ' ' + importlib.metadata.version(m) for m in sys.argv[1:]))"
  ].join("\n")
  for (const python of ["python3", "/usr/bin/python3"]) {
    try {
      const versions = execFileSync(python, ["-c", probe, ...modules], { encoding: "utf8" }).trim()
      return { python, versions }
    } catch {
      // Not this interpreter: the next one.
    }
  }
  return undefined
}

/**
 * A Python receiver on a framework, run as its docstring says (`flask --app ... run`,
 * `uvicorn receiver_fastapi:app`) through `python -m`, on 127.0.0.1 and the test's port.
 */
interface PythonFramework {
  readonly name: string
  readonly file: string
  /** The Debian packages that provide it. */
  readonly packages: string
  readonly found: { readonly python: string; readonly versions: string } | undefined
  readonly args: (port: number) => ReadonlyArray<string>
}

/** `flask run` and uvicorn take the same options for where to listen. */
const onLoopback = (port: number) => ["--host", "127.0.0.1", "--port", String(port)]

const pythonFrameworks: ReadonlyArray<PythonFramework> = [
  {
    name: "Flask (its development server)",
    file: "receiver_flask.py",
    packages: "python3-flask",
    found: pythonWith(["flask"]),
    args: (port) => ["-m", "flask", "--app", "receiver_flask", "run", ...onLoopback(port)]
  },
  {
    name: "FastAPI (on uvicorn)",
    file: "receiver_fastapi.py",
    packages: "python3-fastapi python3-uvicorn",
    found: pythonWith(["fastapi", "uvicorn"]),
    args: (port) => ["-m", "uvicorn", "receiver_fastapi:app", ...onLoopback(port)]
  }
]
const frameworksRun = pythonFrameworks.filter((framework) => underCi || framework.found !== undefined)
const frameworksCompiled = pythonFrameworks.filter((framework) => !frameworksRun.includes(framework))

/** `go` on the PATH, or undefined. */
const goVersion = (() => {
  try {
    return execFileSync("go", ["version"], { encoding: "utf8" }).trim()
  } catch {
    return undefined
  }
})()

/** Go without a download of anything: this toolchain, no module proxy. */
const goEnv = { ...process.env, GOTOOLCHAIN: "local", GOPROXY: "off" }

layer(realServer({ allowPrivateNetworks: true, dispatcherPollMs: 100 }), { excludeTestServices: true })(
  "the guide's receivers verify real deliveries (docs/guides/verify-webhooks.md)",
  (it) => {
    it.scoped(
      "Node (node:http, Express with express.raw, Fastify, Next.js route handler) and Python (standard library): a delivery verifies, the same again verifies, an altered body is refused, and during a rotation the old secret still verifies",
      () =>
        deliverToEach([
          processReceiver("node:http", process.execPath, ["node-http.mjs"]),
          processReceiver("Express", process.execPath, ["express.mjs"]),
          processReceiver("Fastify", process.execPath, ["fastify.mjs"]),
          nextRouteHandler,
          processReceiver("Python standard library", "python3", ["receiver_stdlib.py"])
        ]),
      60_000
    )

    if (frameworksRun.length > 0) {
      it.scoped(
        `Python on ${frameworksRun.map((framework) => framework.name).join(" and ")}: real deliveries as above (${frameworksRun.map((framework) => framework.found?.versions ?? `${framework.packages} not installed`).join("; ")})`,
        () =>
          Effect.gen(function* () {
            const missing = frameworksRun.filter((framework) => framework.found === undefined)
            if (missing.length > 0) {
              const packages = missing.map((framework) => framework.packages).join(" ")
              return yield* Effect.dieMessage(
                `${packages} not installed (no python3 imports them); CI needs them: apt-get install ${packages}`
              )
            }
            // Started together (deliverToEach starts every receiver at once): each takes a while to import.
            yield* deliverToEach(
              frameworksRun.flatMap(({ name, found, args }) =>
                found === undefined ? [] : [processReceiver(name, found.python, args)]
              )
            )
          }),
        60_000
      )
    }

    if (frameworksCompiled.length > 0) {
      const files = frameworksCompiled.map((framework) => framework.file)
      it.effect(
        `${files.join(", ")}: syntax only (compiled by python3, not run: ${frameworksCompiled.map((framework) => framework.packages).join(" ")} not installed here; CI runs them); they share verify_webhook.py, run for real above`,
        () =>
          Effect.gen(function* () {
            // compile() without writing bytecode into docs/guides/verify.
            const script =
              "import sys\nfor f in sys.argv[1:]:\n    compile(open(f, encoding='utf-8').read(), f, 'exec')\n"
            yield* runInVerifyDir("python3", ["-c", script, ...files, "verify_webhook.py"])
          })
      )
    }

    it.scoped.skipIf(goVersion === undefined && !underCi)(
      goVersion === undefined
        ? `Go (net/http): go vet, go build, real deliveries as above (${underCi ? "no go on the PATH: CI needs it" : "skipped: no go on this machine's PATH"})`
        : `Go (net/http): go vet, go build, real deliveries as above (${goVersion})`,
      () =>
        Effect.gen(function* () {
          if (goVersion === undefined) {
            return yield* Effect.dieMessage("no go on the PATH; CI needs it: apt-get install golang-go")
          }
          const buildDir = yield* Effect.acquireRelease(
            Effect.sync(() => mkdtempSync(join(tmpdir(), "intake-go-receiver-"))),
            (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
          )
          const go = (args: ReadonlyArray<string>) => runInVerifyDir("go", args, goEnv)
          yield* go(["vet", "receiver.go"])
          const binary = join(buildDir, "receiver")
          yield* go(["build", "-o", binary, "receiver.go"])
          yield* deliverToEach([processReceiver("Go net/http", binary, [])])
        }),
      60_000
    )
  }
)
