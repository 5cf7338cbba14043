// Loads memex's plugin through OpenClaw's own plugin loader and drives the
// registered context engine: ingest -> assemble -> afterTurn -> compact, and
// the plugin hooks it registers (session_end) through OpenClaw's hook runner.
//
// Run by tests/test_openclaw_plugin.py: node harness.mjs SPEC.json, where the
// spec names the openclaw package folder, the plugin folder, the memex
// command and the turns to play. Prints one JSON object with what each call
// returned. OpenClaw's dist is bundled into hashed chunks; the functions are
// found by name in their chunk's export list, as the package defines them.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const spec = JSON.parse(readFileSync(process.argv[2], "utf8"));
const dist = join(spec.openclaw, "dist");
const chunks = readdirSync(dist).filter((f) => f.endsWith(".mjs"));

async function exported(name) {
  for (const file of chunks) {
    const text = readFileSync(join(dist, file), "utf8");
    if (!text.includes(`function ${name}(`)) continue;
    const match = text.match(new RegExp(`export \\{[^}]*\\b${name} as (\\w+)`));
    if (!match) continue;
    const mod = await import(pathToFileURL(join(dist, file)).href);
    return mod[match[1]];
  }
  throw new Error(`openclaw ${spec.version}: ${name} not found in dist`);
}

const loadPlugins = await exported("loadOpenClawPlugins");
const ensureEngines = await exported("ensureContextEnginesInitialized");
const resolveEngine = await exported("resolveContextEngine");
const hookRunner = await exported("getGlobalHookRunner");

// The config `memex install openclaw` wrote, or one naming the plugin directly.
const config = spec.configFile ? JSON.parse(readFileSync(spec.configFile, "utf8")) : {
  plugins: {
    allow: ["memex"],
    load: { paths: [spec.pluginDir] },
    slots: { contextEngine: "memex" },
    entries: { memex: { enabled: true, config: { command: spec.command, ...(spec.timeoutMs ? { timeoutMs: spec.timeoutMs } : {}) } } },
  },
};
const registry = loadPlugins({ config, workspaceDir: spec.workspace, activate: true, cache: false });
const record = (registry.plugins ?? []).find((p) => p.id === "memex");
ensureEngines();
let engine = await resolveEngine(config, { workspaceDir: spec.workspace });
const out = {
  plugin: record ? { id: record.id, status: record.status, error: record.error ?? null, source: record.source,
    contextEngineIds: record.contextEngineIds ?? [] } : null,
  diagnostics: (registry.diagnostics ?? []).filter((d) => String(d.pluginId ?? "").includes("memex") || d.level === "error")
    .map((d) => ({ level: d.level, message: d.message })),
  engineId: engine?.info?.id ?? null,
  ownsCompaction: engine?.info?.ownsCompaction ?? null,
  steps: [],
};
for (const step of spec.steps) {
  // OpenClaw resolves an engine per run: a fresh instance must share the process.
  if (step.fresh) engine = await resolveEngine(config, { workspaceDir: spec.workspace });
  const started = Date.now();
  let result;
  try {
    // A plugin hook, run by OpenClaw's own hook runner as the gateway does
    // (step.hook "session_end" -> runSessionEnd(event, ctx)).
    if (step.hook) {
      const runner = hookRunner();
      const method = "run" + step.hook.split("_").map((w) => w[0].toUpperCase() + w.slice(1)).join("");
      result = runner ? await runner[method](step.event, step.ctx) : { thrown: "no global hook runner" };
    } else {
      result = await engine[step.op](step.params);
    }
  } catch (err) {
    result = { thrown: String(err?.message ?? err) };
  }
  out.steps.push({ op: step.op ?? step.hook, engineId: engine?.info?.id ?? null, ms: Date.now() - started, result: result ?? null });
}
// A gateway exits when it is done; with spec.waitForExit the harness instead
// lets Node end on its own, which an idle memex process must not prevent.
// (On a pipe, write is asynchronous: exit only once it is flushed.)
process.stdout.write(JSON.stringify(out) + "\n", () => {
  if (!spec.waitForExit) process.exit(0);
});
