/**
 * Counts the instructions Effect's run loop evaluates per request in a running server, by
 * kind (Success, OnSuccess, Sync...) and by the code each one runs: where a request's fiber
 * steps go (docs/performance.md, "The request path"). A measuring tool only: it
 * wraps every instruction, so the server is slower while it is loaded.
 *
 *   cd apps/server && node build.mjs
 *   node --import ../../bench/fiber-steps.mjs dist/main.js    # with the server's variables
 *   # send requests one at a time (a load of many at once counts the same), then:
 *   kill -USR2 <pid>    # prints the counts per request since the previous USR2 to stderr
 *
 * Effect is loaded from where the server's entry resolves it, so that the run loop counted
 * is the server's own.
 */
import { existsSync, realpathSync } from "node:fs"
import http from "node:http"
import { createRequire } from "node:module"
import { dirname, join, resolve } from "node:path"
import { pathToFileURL } from "node:url"

/** The instructions of Effect 3's run loop: the FiberRuntime methods it dispatches to by `_op`. */
const INSTRUCTIONS = [
  "Tag",
  "Left",
  "None",
  "Right",
  "Some",
  "Micro",
  "Sync",
  "Success",
  "Failure",
  "WithRuntime",
  "Blocked",
  "RunBlocked",
  "UpdateRuntimeFlags",
  "OnSuccess",
  "OnStep",
  "OnFailure",
  "Async",
  "Yield",
  "OnSuccessAndFailure",
  "Commit",
  "While",
  "Iterator"
]

const entry = resolve(process.argv[1] ?? "dist/main.js")
const effectPackage = realpathSync(dirname(createRequire(entry).resolve("effect/package.json")))
const effectModule = join(effectPackage, "dist/esm/index.js")
if (!existsSync(effectModule)) throw new Error(`fiber-steps: no ES module build of effect at ${effectModule}`)
const { Effect } = await import(pathToFileURL(effectModule).href)

const fiberRuntime = Object.getPrototypeOf(Effect.runFork(Effect.void))
const byStep = new Map()
let steps = 0
let requests = 0

/** What an instruction runs, as a short line of its source: the thunk or continuation it holds. */
const codeOf = (instruction) => {
  const code = [instruction?.effect_instruction_i0, instruction?.effect_instruction_i1].find(
    (field) => typeof field === "function"
  )
  return code === undefined ? "" : code.toString().replace(/\s+/g, " ").slice(0, 100)
}

let wrapped = 0
for (const name of INSTRUCTIONS) {
  const evaluate = fiberRuntime[name]
  if (typeof evaluate !== "function") continue
  wrapped++
  fiberRuntime[name] = function (instruction) {
    steps++
    const key = `${name} | ${codeOf(instruction)}`
    byStep.set(key, (byStep.get(key) ?? 0) + 1)
    return evaluate.call(this, instruction)
  }
}
if (wrapped === 0)
  throw new Error("fiber-steps: this Effect release's run loop has none of the known instructions")

const emit = http.Server.prototype.emit
http.Server.prototype.emit = function (event, ...args) {
  if (event === "request") requests++
  return emit.call(this, event, ...args)
}

process.on("SIGUSR2", () => {
  const per = (count) => (requests === 0 ? count : count / requests).toFixed(2).padStart(8)
  const lines = [`fiber-steps: ${steps} steps over ${requests} requests: ${per(steps)} a request`]
  for (const [key, count] of [...byStep].sort((a, b) => b[1] - a[1]).slice(0, 60)) {
    lines.push(`${per(count)} ${key}`)
  }
  process.stderr.write(`${lines.join("\n")}\n`)
  byStep.clear()
  steps = 0
  requests = 0
})
