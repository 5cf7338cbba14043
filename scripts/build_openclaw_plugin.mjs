// Builds memex/agents/openclaw_plugin/index.js from index.ts by stripping the
// TypeScript types (Node >= 23.2's own stripper; no compiler dependency).
// Run: node scripts/build_openclaw_plugin.mjs [--check]
import { readFileSync, writeFileSync } from "node:fs";
import { stripTypeScriptTypes } from "node:module";

const dir = new URL("../memex/agents/openclaw_plugin/", import.meta.url);
const header = "// Built from index.ts by scripts/build_openclaw_plugin.mjs; do not edit.\n";
const js = header + stripTypeScriptTypes(readFileSync(new URL("index.ts", dir), "utf8"), { mode: "strip" });
if (process.argv.includes("--check")) {
  if (readFileSync(new URL("index.js", dir), "utf8") !== js) {
    console.error("index.js is out of date: run node scripts/build_openclaw_plugin.mjs");
    process.exit(1);
  }
} else {
  writeFileSync(new URL("index.js", dir), js);
}
