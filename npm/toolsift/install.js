// Run by npm after install (postinstall). On Linux and macOS it puts this platform's
// toolsift binary in place of bin/toolsift.js, so that the `toolsift` that npm links runs the
// binary itself, with no Node in between: arguments arrive as the bytes they were (Node
// holds arguments as UTF-8 strings and would turn a file name such as caf\xe9.json into
// caf\uFFFD.json), and a client that stops toolsift signals toolsift itself. Where this
// does not run (Windows, whose arguments are UTF-16 and suit Node; npm --ignore-scripts;
// other package managers, whose links may run bin/toolsift.js with node), bin/toolsift.js
// stays the launcher, which still works.
"use strict";

const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");

function main() {
  if (process.platform === "win32") return;
  // npm links bin/toolsift.js itself, so the binary can take its place; yarn's and pnpm's
  // links may instead run it with node, or sit in a read-only store.
  if (!/^npm\//.test(process.env.npm_config_user_agent || "")) return;
  const platforms = { darwin: "darwin", linux: "linux" };
  const pkg = `toolsift-${platforms[process.platform] || process.platform}-${process.arch}`;
  let binary;
  try {
    binary = path.join(path.dirname(require.resolve(`${pkg}/package.json`)), "bin", "toolsift");
  } catch {
    return; // no binary (--omit=optional): the launcher says what to do when run
  }
  const launcher = path.join(__dirname, "bin", "toolsift.js");
  const temp = path.join(__dirname, "bin", ".toolsift.tmp");
  try {
    // Only a binary that runs here replaces the launcher.
    execFileSync(binary, ["--version"], { stdio: "ignore", timeout: 30000 });
    fs.rmSync(temp, { force: true });
    try {
      fs.linkSync(binary, temp);
    } catch {
      fs.copyFileSync(binary, temp);
    }
    fs.chmodSync(temp, 0o755);
    fs.renameSync(temp, launcher); // atomic: the link never names half a file
  } catch (err) {
    fs.rmSync(temp, { force: true });
    process.stderr.write(`toolsift: keeping the Node launcher (${err.message})\n`);
  }
}

main();
