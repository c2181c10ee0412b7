#!/usr/bin/env node
// Runs the toolsift binary of this platform's package (toolsift-<os>-<arch>, an optional
// dependency of this one) with this process's arguments, stdin, stdout and stderr, and ends
// as it ends: its exit code, or the signal that ended it. SIGINT, SIGTERM and SIGHUP sent
// to this launcher are passed on, so a client that stops its MCP server stops toolsift.
// On Linux and macOS npm's install (install.js) puts the binary itself in this file's place;
// this launcher runs where it cannot (Windows, npm --ignore-scripts, other package managers).
"use strict";

const { spawn } = require("node:child_process");
const path = require("node:path");

const platforms = { win32: "windows", darwin: "darwin", linux: "linux" };
const pkg = `toolsift-${platforms[process.platform] || process.platform}-${process.arch}`;
const exe = process.platform === "win32" ? "toolsift.exe" : "toolsift";

function binary() {
  if (process.env.TOOLSIFT_BINARY) return process.env.TOOLSIFT_BINARY;
  try {
    return path.join(path.dirname(require.resolve(`${pkg}/package.json`)), "bin", exe);
  } catch {
    process.stderr.write(
      `toolsift: no binary for ${process.platform}-${process.arch}: the package ${pkg} is not installed.\n` +
        `npm installs it beside toolsift as an optional dependency, and leaves it out when it cannot fetch it (offline,\n` +
        `a registry without it) or was told to (--omit=optional). Install it: npm install -g ${pkg},\n` +
        `or download an archive for your platform from the release page and put toolsift on your PATH.\n`,
    );
    process.exit(1);
  }
}

// Node holds arguments as UTF-8 strings: an argument that is not UTF-8 (a file name such as
// caf\xe9.json) would reach toolsift changed (caf\uFFFD.json), naming another file. Linux
// shows the bytes, so such an argument is refused rather than changed.
function checkArgs(args) {
  let raw;
  try {
    raw = require("node:fs").readFileSync("/proc/self/cmdline");
  } catch {
    return;
  }
  const parts = [];
  for (let i = 0, j; i < raw.length; i = j + 1) {
    j = raw.indexOf(0, i);
    if (j < 0) j = raw.length;
    parts.push(raw.subarray(i, j));
  }
  const utf8 = new TextDecoder("utf-8", { fatal: true });
  for (const [k, bytes] of parts.slice(parts.length - args.length).entries()) {
    try {
      utf8.decode(bytes);
    } catch {
      process.stderr.write(
        `toolsift: argument ${k + 1} (${JSON.stringify(args[k])}) is not UTF-8, and the Node launcher cannot pass it on unchanged;\n` +
          `reinstall toolsift with npm without --ignore-scripts (so that the binary replaces the launcher), or run the binary directly: ${binary()}\n`,
      );
      process.exit(2);
    }
  }
}

if (process.platform === "linux") checkArgs(process.argv.slice(2));
const child = spawn(binary(), process.argv.slice(2), { stdio: "inherit", windowsHide: true });
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(sig, () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(sig);
  });
}
child.on("error", (err) => {
  process.stderr.write(`toolsift: starting ${err.path || "the binary"}: ${err.message}\n`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  if (signal) {
    // End the way toolsift ended, so that whoever started the launcher sees the signal.
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
