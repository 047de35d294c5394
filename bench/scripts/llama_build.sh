#!/bin/bash
# Builds the llama.cpp reference binaries the benchmarks compare against; sourced by
# bench/run_comparison.sh, bench/rpc_bench.sh and bench/serving_bench.sh, or run directly:
#
#   bench/scripts/llama_build.sh [bench] [rpc] [server]     # prints NAME=path of each binary
#
# After `llama_build bench rpc server` (any subset) the variables LLAMA_BENCH, RPC_SERVER and
# LLAMA_SERVER name the binaries. llama_build returns non-zero (it never exits the caller) and
# names its log when a step fails. Everything lands outside the repository.
#
# The sources are the llama.cpp release node-llama-cpp 3.21.1 ships (its gitRelease.bundle), so the
# binaries are the same code as node-llama-cpp's prebuilt libraries. Two ways to build (LLAMA_LIBS):
#   prebuilt (default) compile only the program sources (llama-bench, rpc-server + the ggml-rpc
#            backend module, llama-server + its server-context / mtmd / ui objects) and link them
#            against node-llama-cpp's prebuilt libllama / libllama-common / libggml*.so (GGML_BACKEND_DL:
#            the CPU backend is picked at run time, libggml-cpu-zen4.so on this machine). llama.cpp's
#            cmake is configured once (no CPU backend) only to generate build-info.cpp and ui.cpp and
#            to compile the server's objects with llama.cpp's own flags. bench+rpc: 5 compiles, ~2 min;
#            server: 72 compiles (55 of them mtmd), 3.3 CPU-minutes (18 min wall
#            at nice 10 on the shared 2 vCPUs at load ~10).
#   source   full cmake build with -DGGML_NATIVE=ON (-march=native CPU backend compiled here);
#            ~250 compiles for bench+rpc, ~20+ min; more with the server.
# env:
#   LLAMA_SRC    sources, cloned from node-llama-cpp's gitRelease.bundle if absent (/tmp/llama.cpp-src)
#   LLAMA_BUILD  build directory (/tmp/llama.cpp-build); prebuilt binaries go to $LLAMA_BUILD/prebuilt
#   LLAMA_LIBS   prebuilt | source (prebuilt)
#   LLAMA_LOG    directory of the configure / build logs ($LLAMA_BUILD/logs)

LLAMA_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LLAMA_SRC=${LLAMA_SRC:-/tmp/llama.cpp-src}
LLAMA_BUILD=${LLAMA_BUILD:-/tmp/llama.cpp-build}
LLAMA_LIBS=${LLAMA_LIBS:-prebuilt}
LLAMA_LOG=${LLAMA_LOG:-$LLAMA_BUILD/logs}
LLAMA_NLC=$LLAMA_REPO/bench/llamacpp/node_modules/node-llama-cpp
LLAMA_PREBUILT_LIBS=$LLAMA_REPO/bench/llamacpp/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64

llama_fail() { echo "llama_build: $*" >&2; return 1; }

# Clones the sources of node-llama-cpp's llama.cpp release (installs node-llama-cpp if needed).
llama_sources() {
  case "$LLAMA_SRC" in "$LLAMA_REPO"*) llama_fail "LLAMA_SRC must be outside the repo"; return;; esac
  case "$LLAMA_BUILD" in "$LLAMA_REPO"*) llama_fail "LLAMA_BUILD must be outside the repo"; return;; esac
  mkdir -p "$LLAMA_LOG" || return
  [ -f "$LLAMA_SRC/CMakeLists.txt" ] && return
  [ -d "$LLAMA_NLC" ] || ( cd "$LLAMA_REPO/bench/llamacpp" && npm ci --ignore-scripts ) >&2 || return
  [ -f "$LLAMA_NLC/llama/gitRelease.bundle" ] || { llama_fail "no $LLAMA_NLC/llama/gitRelease.bundle"; return; }
  git clone -q "$LLAMA_NLC/llama/gitRelease.bundle" "$LLAMA_SRC" || llama_fail "git clone of the bundle failed"
}

# prebuilt mode: llama.cpp's cmake configured without a CPU backend and without OpenSSL (the prebuilt
# libllama-common.so carries cpp-httplib built without it, so the server must see the same classes)
# and without the web UI (no network): generates build-info.cpp / ui.cpp, compiles nothing by itself.
llama_configure_prebuilt() {
  local c=$LLAMA_BUILD/cfg
  grep -q "^LLAMA_OPENSSL:BOOL=OFF" "$c/CMakeCache.txt" 2>/dev/null && [ -f "$c/build.ninja" ] && return
  cmake -S "$LLAMA_SRC" -B "$c" -G Ninja -DGGML_RPC=ON -DGGML_BACKEND_DL=ON -DGGML_CPU=OFF -DLLAMA_CURL=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DCMAKE_BUILD_TYPE=Release > "$LLAMA_LOG/llama-cmake.log" 2>&1 ||
    llama_fail "cmake configure failed, see $LLAMA_LOG/llama-cmake.log"
}

llama_prebuilt_dir() {  # copies node-llama-cpp's libraries next to the binaries ($ORIGIN rpath)
  local d=$LLAMA_BUILD/prebuilt
  mkdir -p "$d" || return
  [ -f "$d/libllama-common.so" ] || cp "$LLAMA_PREBUILT_LIBS"/*.so "$d"/ || llama_fail "cannot copy $LLAMA_PREBUILT_LIBS/*.so"
}

# Flags of the program sources, as llama.cpp's cmake passes them (GGML_BACKEND_DL, shared libs).
LLAMA_W="-O3 -DNDEBUG -w"
LLAMA_LINK="-Wl,-rpath,\$ORIGIN -L. -l:libllama-common.so -l:libllama.v0.4.0.so -l:libggml.v0.4.0.so -l:libggml-base.so"

llama_build_prebuilt_bench() {
  local d=$LLAMA_BUILD/prebuilt S=$LLAMA_SRC
  LLAMA_BENCH=$d/llama-bench
  [ -x "$LLAMA_BENCH" ] && return
  local L="-DGGML_BACKEND_DL -DGGML_SHARED -DLLAMA_SHARED -DLLAMA_SUBPROCESS -I$S/tools/llama-bench -I$S/common"
  L="$L -I$S/vendor -I$S/include -I$S/ggml/include"
  ( cd "$d" &&
    nice -n 10 c++ $L $LLAMA_W -c "$S/tools/llama-bench/llama-bench.cpp" -o llama-bench.o &&
    nice -n 10 c++ $L $LLAMA_W -c "$S/tools/llama-bench/main.cpp" -o main.o &&
    c++ $L $LLAMA_W -c "$LLAMA_BUILD/cfg/common/build-info.cpp" -o build-info.o &&
    c++ main.o llama-bench.o build-info.o -o llama-bench $LLAMA_LINK
  ) > "$LLAMA_LOG/llama-build-bench.log" 2>&1 || llama_fail "llama-bench link failed, see $LLAMA_LOG/llama-build-bench.log"
}

llama_build_prebuilt_rpc() {
  local d=$LLAMA_BUILD/prebuilt S=$LLAMA_SRC
  RPC_SERVER=$d/rpc-server
  [ -x "$RPC_SERVER" ] && [ -f "$d/libggml-rpc.so" ] && return
  local R="-DGGML_BACKEND_BUILD -DGGML_BACKEND_DL -DGGML_BACKEND_SHARED -DGGML_SCHED_MAX_COPIES=4 -DGGML_SHARED"
  R="$R -D_GNU_SOURCE -D_XOPEN_SOURCE=600 -I$S/ggml/src -I$S/ggml/include -fPIC -std=gnu++17"
  ( cd "$d" &&
    nice -n 10 c++ $R $LLAMA_W -c "$S/ggml/src/ggml-rpc/ggml-rpc.cpp" -o ggml-rpc.o &&
    nice -n 10 c++ $R $LLAMA_W -c "$S/ggml/src/ggml-rpc/transport.cpp" -o transport.o &&
    c++ -shared -o libggml-rpc.so ggml-rpc.o transport.o -Wl,-rpath,'$ORIGIN' -L. -l:libggml-base.so &&
    nice -n 10 c++ -DGGML_BACKEND_DL -DGGML_SHARED -I$S/ggml/include $LLAMA_W -c "$S/tools/rpc/rpc-server.cpp" -o rpc-server.o &&
    c++ rpc-server.o -o rpc-server -Wl,-rpath,'$ORIGIN' -L. -l:libggml.v0.4.0.so -l:libggml-base.so
  ) > "$LLAMA_LOG/llama-build-rpc.log" 2>&1 || llama_fail "rpc-server link failed, see $LLAMA_LOG/llama-build-rpc.log"
}

# llama-server: ninja compiles (in cfg, with llama.cpp's flags) only the objects of the server's own
# targets - server-context, llama-server-impl, llama-server, mtmd (+ vendor-hash), llama-ui,
# llama-common-base (build-info) - and they are linked here into one executable against the prebuilt
# libraries; cpp-httplib comes from libllama-common.so.
llama_build_prebuilt_server() {
  local d=$LLAMA_BUILD/prebuilt c=$LLAMA_BUILD/cfg
  LLAMA_SERVER=$d/llama-server
  [ -x "$LLAMA_SERVER" ] && return
  local objs
  objs=$(ninja -C "$c" -t targets all | grep -oE '^(tools/(mtmd/CMakeFiles/mtmd|server/CMakeFiles/(server-context|llama-server-impl|llama-server)|ui/CMakeFiles/llama-ui)|vendor/hash/CMakeFiles/vendor-hash|common/CMakeFiles/llama-common-base)\.dir/[^:]*\.o' | sort -u)
  [ "$(echo "$objs" | grep -c server-context)" -ge 5 ] || { llama_fail "no server objects in $c/build.ninja"; return; }
  ( nice -n 10 ninja -C "$c" -j2 $objs &&
    cd "$d" && c++ -O3 $(printf "$c/%s " $objs) -o llama-server $LLAMA_LINK -lpthread
  ) > "$LLAMA_LOG/llama-build-server.log" 2>&1 || llama_fail "llama-server build failed, see $LLAMA_LOG/llama-build-server.log"
}

llama_build_source() {  # $@ = bench rpc server
  local targets="" w
  for w in "$@"; do
    case "$w" in bench) targets="$targets llama-bench";; rpc) targets="$targets ggml-rpc-server";;
                 server) targets="$targets llama-server";; esac
  done
  cmake -S "$LLAMA_SRC" -B "$LLAMA_BUILD" -G Ninja -DGGML_RPC=ON -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release > "$LLAMA_LOG/llama-cmake.log" 2>&1 &&
  nice -n 10 cmake --build "$LLAMA_BUILD" -j2 --target $targets > "$LLAMA_LOG/llama-build.log" 2>&1 ||
    { llama_fail "llama.cpp build failed, see $LLAMA_LOG/llama-*.log"; return; }
  LLAMA_BENCH=$LLAMA_BUILD/bin/llama-bench; RPC_SERVER=$LLAMA_BUILD/bin/ggml-rpc-server
  LLAMA_SERVER=$LLAMA_BUILD/bin/llama-server
}

# prebuilt mode: a directory whose llama-bench sees one CPU backend variant of the prebuilt libraries
# only (GGML_BACKEND_DL loads the best-scoring libggml-cpu-*.so next to the executable), e.g.
# `llama_cpu_variant haswell`: llama.cpp's AVX2 (+FMA, F16C) build, to compare with BATON_ISA=avx2.
# Run after `llama_build bench`; sets LLAMA_BENCH_VARIANT to its llama-bench.
llama_cpu_variant() {
  local v=${1:?variant, e.g. haswell} src=$LLAMA_BUILD/prebuilt d=$LLAMA_BUILD/prebuilt-$1 f
  [ -f "$src/libggml-cpu-$v.so" ] && [ -x "$src/llama-bench" ] ||
    { llama_fail "no $src/libggml-cpu-$v.so or llama-bench (LLAMA_LIBS=prebuilt llama_build bench first)"; return; }
  mkdir -p "$d" && cp -f "$src/llama-bench" "$d/" || return
  for f in "$src"/lib*.so; do
    case $(basename "$f") in libggml-cpu-*) ;; *) ln -sf "$f" "$d/" || return;; esac
  done
  ln -sf "$src/libggml-cpu-$v.so" "$d/" && LLAMA_BENCH_VARIANT=$d/llama-bench
}

llama_build() {  # $@ = any of bench rpc server
  local w
  llama_sources || return
  case "$LLAMA_LIBS" in
    source) llama_build_source "$@";;
    prebuilt)
      llama_configure_prebuilt && llama_prebuilt_dir || return
      for w in "$@"; do
        case "$w" in bench|rpc|server) "llama_build_prebuilt_$w" || return;;
                     *) llama_fail "unknown binary '$w' (bench rpc server)"; return;; esac
      done;;
    *) llama_fail "LLAMA_LIBS=source|prebuilt, not '$LLAMA_LIBS'";;
  esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then  # run directly
  [ $# -gt 0 ] || set -- bench
  llama_build "$@" || exit 1
  for w in "$@"; do
    case "$w" in bench) echo "LLAMA_BENCH=$LLAMA_BENCH";; rpc) echo "RPC_SERVER=$RPC_SERVER";;
                 server) echo "LLAMA_SERVER=$LLAMA_SERVER";; esac
  done
fi
