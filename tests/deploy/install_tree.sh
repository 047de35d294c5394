#!/usr/bin/env bash
# The deployment kit as installed (issue 29): `cmake --install` into a staging directory
# (DESTDIR) with prefix /usr, as the .deb lays it out; every tool, unit, environment file, example
# config and doc in place; the installed tools run; and `systemd-analyze verify` accepts both units.
#   install_tree.sh BUILD_DIR
set -euo pipefail
build=$1
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The build tree may be configured with any prefix: install with /usr, as the .deb does. Units
# and environment files are configured with the build's prefix, so the checks below follow it.
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
DESTDIR="$stage" cmake --install "$build" >/dev/null
root="$stage$prefix"
case "$prefix" in /usr) etc="$stage/etc/baton" ;; *) etc="$root/etc/baton" ;; esac

for tool in engine-worker engine-coordinator engine-run engine-bench engine-ctl engine-gguf; do
  [ -x "$root/bin/$tool" ] || fail "$tool not installed in $prefix/bin"
  "$root/bin/$tool" --version | grep -q "^$tool .*(wire protocol [0-9]*)" || fail "$tool --version"
done
for f in "$root/lib/systemd/system/engine-worker.service" "$root/lib/systemd/system/engine-coordinator.service" \
         "$etc/worker.env" "$etc/coordinator.env" "$etc/cluster.yaml" "$root/lib/sysusers.d/baton.conf" \
         "$root/share/doc/baton/README.md" "$root/share/doc/baton/DEPLOY.md" "$root/share/doc/baton/API.md" \
         "$root/share/doc/baton/examples/inventory.tsv"; do
  [ -f "$f" ] || fail "${f#$stage} not installed"
done
# Nothing else: no static libraries, test binaries, benchmarks or headers.
extra=$(find "$stage" -type f | grep -Ev '/bin/engine-(worker|coordinator|run|bench|ctl|gguf)$|/lib/systemd/system/engine-(worker|coordinator)\.service$|/baton/(worker|coordinator)\.env$|/baton/cluster\.yaml$|/sysusers\.d/baton\.conf$|/share/doc/baton/' || true)
[ -z "$extra" ] || fail "unexpected files installed: $extra"

# The units point at the installed tools and environment files.
grep -q "^ExecStart=$prefix/bin/engine-worker " "$root/lib/systemd/system/engine-worker.service" || fail "worker ExecStart"
grep -q "^EnvironmentFile=-${etc#$stage}/worker.env" "$root/lib/systemd/system/engine-worker.service" || fail "worker EnvironmentFile"
grep -q "^Type=notify" "$root/lib/systemd/system/engine-coordinator.service" || fail "coordinator Type=notify"
grep -q "^Restart=on-failure" "$root/lib/systemd/system/engine-coordinator.service" || fail "coordinator Restart"
# The example cluster.yaml is one the coordinator's parser accepts (doctor parses it first).
# (Its model and secret are the operator's to put in place: those checks fail here.)
doctor=$("$root/bin/engine-ctl" doctor "$etc/cluster.yaml" --timeout 0.1 || true)
grep -q "^ok    .*valid cluster config" <<<"$doctor" || fail "the installed cluster.yaml does not parse: $doctor"

if ! command -v systemd-analyze >/dev/null; then
  echo "SKIP: systemd-analyze is not installed (Debian package systemd; scripts/setup-deps.sh installs it)"
  exit 77
fi
# verify checks that ExecStart's binary exists: check copies that point into the staging tree.
for unit in engine-worker engine-coordinator; do
  sed "s#=$prefix/bin/#=$root/bin/#" "$root/lib/systemd/system/$unit.service" > "$stage/$unit.service"
  out=$(cd "$stage" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify "$stage/$unit.service" 2>&1) \
    || fail "systemd-analyze verify $unit.service: $out"
  # Unknown keys and bad values are warnings with exit 0: any line about the unit is a failure.
  if grep -q "$unit" <<<"$out"; then fail "systemd-analyze verify $unit.service: $out"; fi
  # The hardening holds: systemd's exposure score (0 = locked down, 10 = none) stays below 3.0.
  score=$(cd "$stage" && systemd-analyze security --offline=yes --threshold=30 "$stage/$unit.service" 2>&1 | tail -1) \
    || fail "systemd-analyze security $unit.service above 3.0: $score"
  echo "systemd-analyze verify $unit.service: clean; security: ${score#→ }"
done
echo "install tree OK ($prefix, $(find "$stage" -type f | wc -l) files)"
