/**
 * The Effect scheduler of request fibers, set by server.ts on the runtime that runs each
 * request. Background fibers (the dispatcher, the summary runner) keep Effect's default.
 */
import { type Fiber, Scheduler } from "effect"

/**
 * The scheduler of request fibers (docs/performance.md, The request path): a fiber
 * resumed by a callback (a statement's answer, a body's end, Redis's reply) runs on at
 * once, in that callback, where Effect's default scheduler would queue it for a microtask
 * (a create resumes about ten times). Whatever is scheduled while such a run is under way
 * (another fiber resumed, a fiber yielding after its budget of steps) goes to the default
 * scheduler, so runs never nest and a yield still yields.
 */
export class RequestScheduler implements Scheduler.Scheduler {
  private running = false
  scheduleTask(task: Scheduler.Task, priority: number, fiber?: Fiber.RuntimeFiber<unknown, unknown>) {
    if (this.running) return Scheduler.defaultScheduler.scheduleTask(task, priority, fiber)
    this.running = true
    try {
      task()
    } finally {
      this.running = false
    }
  }
  shouldYield(fiber: Fiber.RuntimeFiber<unknown, unknown>) {
    return Scheduler.defaultScheduler.shouldYield(fiber)
  }
}
