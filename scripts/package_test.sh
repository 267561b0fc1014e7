#!/usr/bin/env bash
# The Debian package, built and tried as an operator would (docs/deploy.md):
#   1. a CPU build configured for /usr (build-pkg/), `cpack -G DEB`: actorserve_<version>_amd64.deb
#   2. dpkg-deb: its control fields (name, version, the Debian libraries it depends on), its
#      conffile, the files it lays out
#   3. installed with dpkg into a scratch root (dpkg --root, its own package database)
#   4. systemd-analyze verify of the installed unit, and its security exposure score
#   5. the installed actorserve-fetch-models checks the models put in the scratch state directory
#   6. the installed binary started on the installed settings (paths moved into the scratch root,
#      a free port): /health, the installed chat page, a chat completion, SIGTERM, exit 0, and the
#      answer cache saved in the state directory
# Exits non-zero on the first check that fails, naming it.
#
# Environment: BUILD_DIR [build-pkg], KEEP=1 keeps the scratch root.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
BUILD_DIR="${BUILD_DIR:-build-pkg}"

say() { printf 'package-test: %s\n' "$*"; }
die() { printf 'package-test: FAILED: %s\n' "$*" >&2; exit 1; }
for c in dpkg dpkg-deb dpkg-shlibdeps systemd-analyze curl; do
  command -v "$c" >/dev/null || die "no $c (scripts/setup.sh installs dpkg-dev, systemd and curl)"
done
[[ -f models/SmolLM2-135M-Instruct.Q4_1.gguf ]] || die "no models/ (run scripts/setup.sh)"

# 1. the package
env BUILD_DIR="$BUILD_DIR" TARGETS="actorserve actorserve-bench" \
  CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Release -DACTORSERVE_SANITIZE= -DACTORSERVE_CUDA=OFF -DCMAKE_INSTALL_PREFIX=/usr" \
  scripts/build.sh
rm -f "$BUILD_DIR"/actorserve_*.deb
(cd "$BUILD_DIR" && cpack -G DEB) > "$BUILD_DIR/cpack.log" 2>&1 || { cat "$BUILD_DIR/cpack.log"; die "cpack -G DEB"; }
version="$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$BUILD_DIR/CMakeCache.txt")"
DEB="$BUILD_DIR/actorserve_${version}_amd64.deb"
[[ -f "$DEB" ]] || die "cpack made no $DEB: $(ls "$BUILD_DIR"/*.deb 2>/dev/null)"
say "built $(basename "$DEB") ($(du -k "$DEB" | cut -f1) KiB)"

# 2. what it says and holds
field() { dpkg-deb --field "$DEB" "$1"; }
[[ "$(field Package)" == actorserve ]] || die "Package is '$(field Package)'"
[[ "$(field Version)" == "$version" ]] || die "Version is '$(field Version)', the project's is $version"
[[ "$(field Architecture)" == amd64 ]] || die "Architecture is '$(field Architecture)'"
depends="$(field Depends)"
for lib in libcaf-core0.17 libsimdjson14 libtomlplusplus3 libopenblas0 libicu72 libsystemd0; do
  grep -q "$lib" <<< "$depends" || die "Depends lacks $lib: $depends"
done
grep -q cuda <<< "$depends" && die "Depends names CUDA: $depends"
dpkg-deb --ctrl-tarfile "$DEB" | tar -xO ./conffiles | grep -qx /etc/actorserve/actorserve.toml \
  || die "/etc/actorserve/actorserve.toml is not a conffile"
contents="$(dpkg-deb --contents "$DEB" | awk '{print $6}')"
for f in ./usr/bin/actorserve ./usr/bin/actorserve-bench ./usr/bin/actorserve-fetch-models \
         ./usr/share/actorserve/web/index.html ./usr/share/actorserve/configs/guard_examples.jsonl \
         ./usr/share/actorserve/prometheus/alerts.yml ./usr/share/actorserve/grafana/actorserve.json \
         ./usr/share/actorserve/web/dashboard.html ./etc/actorserve/actorserve.toml \
         ./lib/systemd/system/actorserve.service ./usr/share/doc/actorserve/deploy.md; do
  grep -qx "$f" <<< "$contents" || die "the package lacks $f"
done
grep -q '\.gguf$\|safetensors$' <<< "$contents" && die "the package carries a model"
say "control fields, conffile and $(wc -l <<< "$contents") paths as expected; Depends: $depends"

# 3. installed into a scratch root with its own package database
R="$(mktemp -d "${TMPDIR:-/tmp}/actorserve-root.XXXXXX")"
server_pid=""
cleanup() {
  [[ -n "$server_pid" ]] && kill -9 "$server_pid" 2>/dev/null || true
  if [[ "${KEEP:-0}" == 1 ]]; then say "scratch root kept: $R"; else rm -rf "$R"; fi
}
trap cleanup EXIT
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/triggers"
touch "$R/var/lib/dpkg/status" "$R/var/lib/dpkg/available"
force=(--force-depends)   # the scratch database knows none of the libraries; the host has them
[[ "$(id -u)" == 0 ]] || force+=(--force-not-root)
dpkg --root="$R" "${force[@]}" --log="$R/dpkg.log" -i "$DEB" > "$R/dpkg-install.log" 2>&1 \
  || { cat "$R/dpkg-install.log"; die "dpkg -i into the scratch root"; }
dpkg --root="$R" -s actorserve | grep -qx "Status: install ok installed" || die "dpkg does not list actorserve as installed"
[[ -x "$R/usr/bin/actorserve" ]] || die "no $R/usr/bin/actorserve after dpkg -i"
say "installed into $R (dpkg --root): $(dpkg --root="$R" -L actorserve | wc -l) paths"

# 4. the unit, and the root as a system with systemd
unit="$R/lib/systemd/system/actorserve.service"
grep -q '@[A-Z_]*@' "$unit" && die "the installed unit has an unfilled @VARIABLE@: $(grep '@[A-Z_]*@' "$unit")"
# The root is a system with systemd: its own units (the targets the unit's defaults refer to)
# beside ours, copied from this machine.
cp -rn /lib/systemd/system/. "$R/lib/systemd/system/"
systemd-analyze verify --root="$R" /lib/systemd/system/actorserve.service > "$R/verify.log" 2>&1 \
  || { cat "$R/verify.log"; die "systemd-analyze verify of the installed unit"; }
[[ -s "$R/verify.log" ]] && { cat "$R/verify.log"; die "systemd-analyze verify warned"; }
security="$(systemd-analyze security --offline=true --root="$R" /lib/systemd/system/actorserve.service 2>&1 | tail -1)"
say "systemd-analyze verify: clean; security: ${security#→ }"

# 5. the models, checked by the installed fetch script (already there: nothing is downloaded)
state="$R/var/lib/actorserve"
mkdir -p "$state/models"
cp -r models/SmolLM2-135M-Instruct.Q4_1.gguf models/all-MiniLM-L6-v2 "$state/models/"
"$R/usr/bin/actorserve-fetch-models" "$state/models" || die "the installed actorserve-fetch-models"

# 6. the installed binary on the installed settings, moved into the scratch root
conf="$R/serve.toml"
sed -e "s|\"/var/lib/actorserve/|\"$state/|g" -e "s|\"/usr/share/actorserve/|\"$R/usr/share/actorserve/|g" \
    -e "s|^port = [0-9]*|port = 0|" -e "s|^port_file = \"\"|port_file = \"$R/port\"|" \
    "$R/etc/actorserve/actorserve.toml" > "$conf"
grep -q '"/var/lib\|"/usr/share' "$conf" && die "a path of the installed settings was not moved: $(grep '"/var/lib\|"/usr/share' "$conf")"
(cd / && exec "$R/usr/bin/actorserve" serve --config "$conf") > "$R/server.log" 2>&1 &
server_pid=$!
url=""
for _ in $(seq 1 240); do
  kill -0 "$server_pid" 2>/dev/null || { cat "$R/server.log"; die "the installed server exited at start"; }
  if [[ -s "$R/port" ]]; then
    url="http://127.0.0.1:$(cat "$R/port")"
    [[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/health")" == 200 ]] && break
  fi
  sleep 0.5
done
[[ -n "$url" && "$(curl -s -o /dev/null -w '%{http_code}' "$url/health")" == 200 ]] || { cat "$R/server.log"; die "/health never answered 200"; }
curl -sf "$url/" | grep -q "<html" || die "GET / did not serve the installed chat page"
cmp -s <(curl -sf "$url/app.js") "$R/usr/share/actorserve/web/app.js" || die "GET /app.js is not the installed file"
answer="$(curl -sf "$url/v1/chat/completions" -H 'Content-Type: application/json' \
  -d '{"messages":[{"role":"user","content":"Say hello."}],"max_tokens":8,"temperature":0}')" \
  || die "POST /v1/chat/completions failed"
grep -q '"finish_reason"' <<< "$answer" || die "chat completion without a finish_reason: $answer"
kill -TERM "$server_pid"
rc=0; wait "$server_pid" || rc=$?
server_pid=""
[[ $rc == 0 ]] || { cat "$R/server.log"; die "the installed server exited $rc after SIGTERM"; }
[[ -f "$state/cache/exact.cache" ]] || { ls -R "$state"; die "no answer cache saved in the state directory"; }
say "the installed server on the installed settings: /health 200, the chat page, a chat answer, exit 0, cache saved in the state directory"
say "all checks passed"
