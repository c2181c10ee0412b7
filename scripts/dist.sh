#!/usr/bin/env bash
# Builds toolsift's release artifacts into dist/ (or $DIST):
#   toolsift_<version>_<os>_<arch>.tar.gz (.zip for Windows): a folder of that name holding the
#     binary, LICENSE, NOTICE and README.md, so that unpacking it overwrites nothing beside it
#   checksums.txt: SHA-256 of each archive (sha256sum -c --ignore-missing checksums.txt verifies
#     those downloaded)
#   npm/: toolsift-<version>.tgz (the launcher) and toolsift-<os>-<arch>-<version>.tgz (a binary each)
#   server.json: the MCP Registry's entry for this version (npm package toolsift)
# Usage: VERSION=v1.2.3 bash scripts/dist.sh
# PLATFORMS="linux/amd64 darwin/arm64" limits the platforms (default: linux, darwin and
# windows on amd64 and arm64). The same commit and VERSION give the same bytes: builds are
# -trimpath with no build ID, and archives are dated from the commit (SOURCE_DATE_EPOCH).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

: "${VERSION:?set VERSION, such as VERSION=v1.2.3}"
[[ $VERSION =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || { echo "VERSION $VERSION: want vMAJOR.MINOR.PATCH[-PRERELEASE]" >&2; exit 2; }
npmver=${VERSION#v}
dist=${DIST:-$root/dist}
platforms=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Only what an earlier run wrote is removed: DIST may name a folder with other files.
mkdir -p "$dist/npm"
rm -f "$dist"/toolsift_*.tar.gz "$dist"/toolsift_*.zip "$dist/checksums.txt" "$dist/server.json" "$dist"/npm/toolsift-*.tgz
go build -o "$work/zip" ./scripts/zip

launcher=$work/npm/toolsift
mkdir -p "$launcher"
cp -r npm/toolsift/. "$launcher/"
cp LICENSE NOTICE "$launcher/"
optional=()

for p in $platforms; do
  os=${p%/*} arch=${p#*/}
  exe=toolsift
  [ "$os" = windows ] && exe=toolsift.exe
  out=$work/$os-$arch
  mkdir -p "$out"
  echo "building $os/$arch" >&2
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=false \
    -ldflags "-s -w -buildid= -X github.com/toolsift/toolsift/cli.version=$VERSION -X github.com/toolsift/toolsift/cli.commit=$commit" -o "$out/$exe" .
  cp LICENSE NOTICE README.md "$out/"

  name=toolsift_${VERSION}_${os}_${arch}
  if [ "$os" = windows ]; then
    (cd "$out" && "$work/zip" "$dist/$name.zip" "$name/$exe=$exe" "$name/LICENSE=LICENSE" "$name/NOTICE=NOTICE" "$name/README.md=README.md")
  else
    tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
      --transform "s,^,$name/," -C "$out" -cf - "$exe" LICENSE NOTICE README.md | gzip -n -9 > "$dist/$name.tar.gz"
  fi

  # npm names platforms as Node does: process.arch x64, not amd64.
  npmarch=$arch
  [ "$arch" = amd64 ] && npmarch=x64
  npmos=$os
  [ "$os" = windows ] && npmos=win32
  pkg=toolsift-$os-$npmarch
  pdir=$work/npm/$pkg
  mkdir -p "$pdir/bin"
  cp "$out/$exe" "$pdir/bin/"
  cp LICENSE NOTICE "$pdir/"
  cat > "$pdir/package.json" <<JSON
{
  "name": "$pkg",
  "version": "$npmver",
  "description": "The toolsift binary for $os/$arch; install toolsift, which runs it.",
  "license": "Apache-2.0",
  "repository": { "type": "git", "url": "git+https://github.com/toolsift/toolsift.git" },
  "os": ["$npmos"],
  "cpu": ["$npmarch"],
  "files": ["bin/$exe", "LICENSE", "NOTICE"]
}
JSON
  optional+=("\"$pkg\": \"$npmver\"")
  (cd "$dist/npm" && npm pack --silent "$pdir" > /dev/null)
done

# The launcher's package names this version, and each platform's package at it.
node - "$launcher/package.json" "$npmver" "${optional[@]}" <<'JS'
const fs = require("node:fs");
const [file, version, ...deps] = process.argv.slice(2);
const pkg = JSON.parse(fs.readFileSync(file, "utf8"));
pkg.version = version;
pkg.optionalDependencies = JSON.parse("{" + deps.join(",") + "}");
fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + "\n");
JS
(cd "$dist/npm" && npm pack --silent "$launcher" > /dev/null)

node - server.json "$dist/server.json" "$npmver" <<'JS'
const fs = require("node:fs");
const [from, to, version] = process.argv.slice(2);
const entry = JSON.parse(fs.readFileSync(from, "utf8"));
entry.version = version;
for (const p of entry.packages) p.version = version;
fs.writeFileSync(to, JSON.stringify(entry, null, 2) + "\n");
JS

shopt -s nullglob
cd "$dist"
archives=(*.tar.gz *.zip)
sha256sum -- "${archives[@]}" > checksums.txt
echo "wrote $dist:" >&2
printf '  %s\n' "${archives[@]}" checksums.txt server.json npm/*.tgz >&2
