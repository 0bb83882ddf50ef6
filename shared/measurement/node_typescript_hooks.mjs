// The hooks node_typescript.mjs registers: resolve `x.js` to `x.ts`, and load TypeScript transpiled by the project's
// own typescript package (its transpileModule).
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

let ts = null;

export async function initialize({ base }) {
  ts = createRequire(base)("typescript");
}

export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (error) {
    if (/^\.{0,2}\//.test(specifier) && /\.[mc]?js$/.test(specifier)) {
      return next(specifier.replace(/\.([mc]?)js$/, ".$1ts"), context);
    }
    throw error;
  }
}

export async function load(url, context, next) {
  if (!/\.[mc]?ts$/.test(url) || !url.startsWith("file:")) return next(url, context);
  const path = fileURLToPath(url);
  const common = path.endsWith(".cts");
  const source = await readFile(path, "utf8");
  const { outputText } = ts.transpileModule(source, {
    fileName: path,
    compilerOptions: {
      module: common ? ts.ModuleKind.CommonJS : ts.ModuleKind.ESNext,
      target: ts.ScriptTarget.ES2022,
      esModuleInterop: true,
      allowImportingTsExtensions: true,
      rewriteRelativeImportExtensions: false,
      sourceMap: false,
      inlineSourceMap: true,
    },
  });
  return { format: common ? "commonjs" : "module", source: outputText, shortCircuit: true };
}
