#!/usr/bin/env bash
# Installs the Debian 12 packages Baton builds and tests with. Idempotent: runs
# `apt-get update` only when a package is missing, and does nothing when all are there.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git curl
  libasio-dev libdnnl-dev libflatbuffers-dev flatbuffers-compiler libfmt-dev catch2 libyaml-cpp-dev
  libpcre2-dev libicu-dev libssl-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libcpp-httplib-dev
  libsystemd-dev systemd   # sd_notify readiness of the services; `systemd-analyze verify` of their units (tests/deploy)
  dpkg-dev                 # dpkg-shlibdeps: the .deb's dependencies (scripts/build-deb.sh)
  clang libclang-rt-14-dev
  clang-format             # scripts/format.sh (.clang-format)
  etcd-server etcd-client  # the etcd registry tests start a real etcd on 127.0.0.1
  chromium                 # the web UI tests (tests/webui) drive it headless with puppeteer-core
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup-deps: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q "${missing[@]}"
fi
