#!/bin/bash
# dtrain as a package, checked from the outside: installs this build into a
# temporary prefix and uses it as a user would, with nothing from the
# source or build tree.
#
#   install_test.sh BUILD_DIR SOURCE_DIR VERSION [HAS_LIBTORCH]
#
# HAS_LIBTORCH (0 or 1, default 0): the build has the libtorch adapter
# (DTRAIN_HAS_LIBTORCH), and steps 4b and 5b run.
#
#  1. the installed tree: headers, versioned libraries, bin/dtrain only
#     (no tests or benchmarks), the CMake package, dtrain.pc; at most 50
#     header files (the driver API, the plugin API, the libtorch adapter's:
#     cmake/install.cmake lists them); no installed header includes a
#     private dependency (CAF, Gloo, OpenBLAS, yaml-cpp, SQLite, Cap'n
#     Proto, CUDA, NCCL, OpenSSL): every one but the adapter's is
#     preprocessed with only the prefix (and the system's directories) on
#     the include path, and none may reach a caf/ or openssl/ header; the
#     package and dtrain.pc ask for no CAF; only the adapter's headers
#     (dtrain/libtorch/) include libtorch's, a public dependency of the
#     package's `libtorch` component alone; the adapter's library, headers
#     and targets file are there exactly when the build has it;
#  2. bin/dtrain runs from the prefix (its rpath finds the prefix's
#     libdtrain_core) and prints VERSION;
#  3. pkg-config knows VERSION, a program built with only its flags (the
#     public driver API, no CAF) links and trains on an embedded cluster,
#     and all installed headers compile together with its flags;
#  4. examples/custom-operator, copied out of the tree, configures and
#     builds with find_package(dtrain) and -DCMAKE_PREFIX_PATH=<prefix>,
#     its compile commands naming neither the source nor the build tree,
#     with Torch's package disabled (the rest of dtrain needs no libtorch);
#     find_package(dtrain COMPONENTS libtorch) fails, naming the component,
#     from an install without the adapter;
# 4b. (libtorch) examples/libtorch-cnn builds the same way with
#     find_package(dtrain COMPONENTS libtorch); its plugin links
#     libdtrain_libtorch; the adapter's headers compile together with the
#     flags the component gives;
#  5. its driver trains the plugin's operator for one epoch with two
#     replicas, which end with equal parameter hashes: on an embedded
#     cluster, then (two epochs, equal hashes after each) on the installed
#     dtrain's head and two one-slot nodes on loopback over mutual TLS with
#     certificates made by the installed `dtrain cert`; both nodes receive
#     the plugin from the driver;
# 5b. (libtorch, with Fashion-MNIST present) on that cluster the libtorch
#     example's driver trains its CNN with two replicas (one per node, both
#     nodes loading the shipped plugin and with it libtorch) for one epoch
#     on the first 4000 images, above chance on 2000 test images; then a
#     sweep of two one-epoch trials over the learning rate ends both;
#  6. the prefix moved elsewhere still works (rpath, pkg-config paths).
set -euo pipefail

build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
version=$3
has_libtorch=${4:-0}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dtrain-install-test.XXXXXX")
prefix=$tmp/prefix
export DTRAIN_HOME=$tmp/home   # pid files, logs, plugins: this test's own
unset DTRAIN_ADDRESS
cleanup() {
  # The cluster of step 5, if a failure left it running (`dtrain stop`
  # stops only what DTRAIN_HOME records).
  if [ -x "$prefix/bin/dtrain" ]; then "$prefix/bin/dtrain" stop > /dev/null 2>&1 || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
step() { echo "-- $*"; }

step "cmake --install $build --prefix <tmp>/prefix"
cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" ||
  { cat "$tmp/install.log"; fail "cmake --install failed"; }

# ---- 1. the installed tree ----------------------------------------------------
libdir=lib
[ -d "$prefix/lib" ] || fail "no lib/ under the prefix: $(ls "$prefix")"
for f in include/dtrain/build_config.hpp include/dtrain/plugin/plugin.hpp \
         include/dtrain/train/operator.hpp include/dtrain/dtrain.hpp \
         include/dtrain/api/config.hpp \
         $libdir/libdtrain_core.so.$version $libdir/libdtrain_serialization.so.$version \
         $libdir/libdtrain_cluster.so.$version $libdir/libdtrain_driver.so.$version $libdir/libdtrain_dashboard.so.$version \
         share/dtrain/web/index.html \
         share/dtrain/web/vendor/uPlot.iife.min.js \
         $libdir/cmake/dtrain/dtrainConfig.cmake $libdir/cmake/dtrain/dtrainConfigVersion.cmake \
         $libdir/cmake/dtrain/dtrainTargets.cmake \
         $libdir/pkgconfig/dtrain.pc bin/dtrain; do
  [ -f "$prefix/$f" ] || fail "not installed: $f"
done
for lib in core serialization cluster driver dashboard; do
  [ "$(readlink "$prefix/$libdir/libdtrain_$lib.so")" = "libdtrain_$lib.so.$version" ] ||
    fail "libdtrain_$lib.so does not link to libdtrain_$lib.so.$version"
done
programs=$(ls "$prefix/bin")
[ "$programs" = "dtrain" ] || fail "bin/ should hold only dtrain, holds: $programs"
grep -q "#define DTRAIN_VERSION \"$version\"" "$prefix/include/dtrain/build_config.hpp" ||
  fail "the installed config.hpp does not say version $version"

libtorch_files="include/dtrain/libtorch/operator.hpp $libdir/libdtrain_libtorch.so.$version
                $libdir/cmake/dtrain/dtrainLibtorchTargets.cmake"
for f in $libtorch_files; do
  if [ "$has_libtorch" = 1 ]; then
    [ -f "$prefix/$f" ] || fail "not installed (the build has the libtorch adapter): $f"
  else
    [ ! -e "$prefix/$f" ] || fail "installed without the libtorch adapter: $f"
  fi
done

# The public headers only: a file under include/ that is not in
# cmake/install.cmake's list would be caught here by the count.
count=$(find "$prefix/include" -type f | wc -l)
echo "$count installed header files:"
(cd "$prefix/include" && find . -type f | sort | sed 's|^\./|  |')
[ "$count" -le 50 ] || fail "$count header files installed, at most 50 may be"
# Every header on its own, preprocessed with nothing but the prefix on the
# include path: it must be complete (no header of the build tree it needs
# is missing) and reach no CAF or OpenSSL header, directly or through
# another. The adapter's need libtorch's include paths: they are compiled
# in step 4b, and their own includes are checked below.
step "every installed header preprocessed alone: no caf/ or openssl/ among its includes"
reached=""
for h in $(cd "$prefix/include" && find dtrain -name '*.hpp' -not -path 'dtrain/libtorch/*' | sort); do
  deps=$(echo "#include \"$h\"" | c++ -std=c++17 -x c++ -M -I"$prefix/include" - 2> "$tmp/pp.log") ||
    { cat "$tmp/pp.log"; fail "$h does not preprocess with only the prefix on the include path"; }
  bad=$(echo "$deps" | tr ' \\' '\n\n' | grep -E '/(caf|openssl)/' || true)
  [ -z "$bad" ] || reached="$reached$h -> $(echo "$bad" | head -3 | tr '\n' ' ')\n"
done
[ -z "$reached" ] || fail "installed headers reach CAF or OpenSSL:\n$(printf "%b" "$reached")"
echo "none of $(cd "$prefix/include" && find dtrain -name '*.hpp' -not -path 'dtrain/libtorch/*' | wc -l) headers reaches caf/ or openssl/"
# Outside comments, neither the package nor dtrain.pc names CAF.
caf_lines=$(grep -nH 'CAF\|caf' "$prefix/$libdir/cmake/dtrain/"*.cmake "$prefix/$libdir/pkgconfig/dtrain.pc" |
              grep -v ':[0-9]*: *#' || true)
[ -z "$caf_lines" ] || fail "the package or dtrain.pc asks for CAF: $caf_lines"
[ ! -e "$prefix/$libdir/cmake/dtrain/FindCAF.cmake" ] || fail "FindCAF.cmake installed: the package needs no CAF"

leaks=$(grep -rlE '#include *[<"](caf/|yaml-cpp/|sqlite3\.h|kj/|capnp/|gloo/|cblas|cuda|cublas|nccl\.h|openssl/)' \
          "$prefix/include" || true)
[ -z "$leaks" ] || fail "installed headers include private dependencies: $leaks"
# libtorch is public to the `libtorch` component only: no other header may
# include it, or find_package(dtrain) without that component would break.
leaks=$(grep -rlE '#include *[<"](torch/|ATen/|c10/)' "$prefix/include" |
          grep -v "^$prefix/include/dtrain/libtorch/" || true)
[ -z "$leaks" ] || fail "headers outside dtrain/libtorch/ include libtorch: $leaks"

# ---- 2. bin/dtrain from the prefix ----------------------------------------------
step "bin/dtrain --version"
out=$(env -u LD_LIBRARY_PATH "$prefix/bin/dtrain" --version)
[ "$out" = "dtrain $version" ] || fail "dtrain --version printed '$out', not 'dtrain $version'"
core=$(env -u LD_LIBRARY_PATH ldd "$prefix/bin/dtrain" | awk '/libdtrain_core/ {print $3}')
case "$core" in
  "$prefix"/*) ;;
  *) fail "the installed dtrain loads libdtrain_core from '$core', not from the prefix" ;;
esac

# ---- 3. pkg-config --------------------------------------------------------------
step "pkg-config"
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
out=$(pkg-config --modversion dtrain)
[ "$out" = "$version" ] || fail "pkg-config --modversion dtrain: '$out', not '$version'"
# shellcheck disable=SC2046
c++ -std=c++17 "$source/tests/install/pkg_consumer.cpp" -o "$tmp/pkg_consumer" \
  $(pkg-config --cflags --libs dtrain) || fail "a program built with pkg-config's flags"
out=$(LD_LIBRARY_PATH=$prefix/$libdir "$tmp/pkg_consumer") ||
  fail "the pkg-config program failed: $out"
echo "$out"

step "every installed header, compiled together with pkg-config's flags"
# Except the adapter's (dtrain/libtorch/): they need libtorch, which
# dtrain.pc does not give (the adapter is a component of the CMake package
# only). Step 4b compiles them together with the flags that component
# gives, instead of guessing libtorch's include paths here.
(cd "$prefix/include" && find dtrain -name '*.hpp' -not -path 'dtrain/libtorch/*' | sort |
   sed 's/.*/#include "&"/') > "$tmp/all_headers.cpp"
[ "$(wc -l < "$tmp/all_headers.cpp")" -gt 20 ] || fail "too few headers installed"
# shellcheck disable=SC2046
c++ -std=c++17 -fsyntax-only $(pkg-config --cflags dtrain) "$tmp/all_headers.cpp" ||
  fail "the installed headers do not compile on their own"
unset PKG_CONFIG_PATH

# ---- 4. the out-of-tree example -------------------------------------------------
step "examples/custom-operator against the package"
cp -r "$source/examples/custom-operator" "$tmp/example"
rm -rf "$tmp/example/build"
generator=()
if command -v ninja > /dev/null; then generator=(-G Ninja); fi
# Torch disabled: a consumer without libtorch still finds dtrain.
cmake -S "$tmp/example" -B "$tmp/example-build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_Torch=ON > "$tmp/configure.log" 2>&1 ||
  { cat "$tmp/configure.log"; fail "the example does not configure"; }
cmake --build "$tmp/example-build" > "$tmp/build.log" 2>&1 ||
  { cat "$tmp/build.log"; fail "the example does not build"; }
commands=$tmp/example-build/compile_commands.json
[ -f "$commands" ] || fail "no compile_commands.json"
grep -q "spiral_operator.cpp" "$commands" || fail "compile_commands.json lacks the plugin"
for tree in "$source" "$build"; do
  if grep -q "$tree" "$commands" "$tmp/example-build/build.ninja" 2> /dev/null; then
    fail "the example's build refers to $tree"
  fi
done
plugin=$tmp/example-build/libmy_operators.so
[ -f "$plugin" ] || fail "no plugin built: $(ls "$tmp/example-build")"
if nm -D --defined-only "$plugin" | grep -q " T dtrain_plugin_init_v1$"; then :; else
  fail "the plugin does not export dtrain_plugin_init_v1"
fi
needed=$(readelf -d "$plugin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "$needed" | grep -qx "libdtrain_core.so.$version" ||
  fail "the plugin does not link libdtrain_core.so.$version: $needed"
if echo "$needed" | grep -q "caf"; then fail "the plugin links CAF (dtrain::plugin should not)"; fi
needed=$(readelf -d "$tmp/example-build/my_driver" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "$needed" | grep -qx "libdtrain_driver.so.$version" ||
  fail "the driver does not link libdtrain_driver.so.$version: $needed"
if echo "$needed" | grep -q "caf"; then fail "the driver links CAF itself (dtrain::dtrain should not make it)"; fi
grep -qa "dtrain-plugin-abi:dtrain $version;" "$plugin" ||
  fail "the plugin does not carry the ABI tag of dtrain $version"

step "find_package(dtrain COMPONENTS libtorch) from an install without the adapter"
mkdir -p "$tmp/needs-libtorch"
cat > "$tmp/needs-libtorch/CMakeLists.txt" << 'EOF_CMAKE'
cmake_minimum_required(VERSION 3.18)
project(needs_libtorch LANGUAGES CXX)
find_package(dtrain 0.1 REQUIRED COMPONENTS libtorch)
EOF_CMAKE
# With the adapter installed, its targets file is set aside for this check:
# the package then reads as an install built without it.
targets=$prefix/$libdir/cmake/dtrain/dtrainLibtorchTargets.cmake
if [ -f "$targets" ]; then mv "$targets" "$tmp/targets.aside"; fi
if cmake -S "$tmp/needs-libtorch" -B "$tmp/needs-libtorch-build" -DCMAKE_PREFIX_PATH="$prefix" \
     > "$tmp/needs-libtorch.log" 2>&1; then
  cat "$tmp/needs-libtorch.log"; fail "find_package(dtrain COMPONENTS libtorch) succeeded without the adapter"
fi
grep -q "component 'libtorch'" "$tmp/needs-libtorch.log" ||
  { cat "$tmp/needs-libtorch.log"; fail "the failure does not name the libtorch component"; }
if [ -f "$tmp/targets.aside" ]; then mv "$tmp/targets.aside" "$targets"; fi

# ---- 4b. the libtorch example -----------------------------------------------------
if [ "$has_libtorch" = 1 ]; then
  step "examples/libtorch-cnn against the package (COMPONENTS libtorch)"
  cp -r "$source/examples/libtorch-cnn" "$tmp/torch-example"
  rm -rf "$tmp/torch-example/build"
  cmake -S "$tmp/torch-example" -B "$tmp/torch-example-build" "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
    > "$tmp/torch-configure.log" 2>&1 ||
    { cat "$tmp/torch-configure.log"; fail "the libtorch example does not configure"; }
  cmake --build "$tmp/torch-example-build" > "$tmp/torch-build.log" 2>&1 ||
    { cat "$tmp/torch-build.log"; fail "the libtorch example does not build"; }
  for tree in "$source" "$build"; do
    if grep -q "$tree" "$tmp/torch-example-build/compile_commands.json" \
         "$tmp/torch-example-build/build.ninja" 2> /dev/null; then
      fail "the libtorch example's build refers to $tree"
    fi
  done
  torch_plugin=$tmp/torch-example-build/libtorch_cnn_operators.so
  torch_driver=$tmp/torch-example-build/libtorch_cnn_driver
  if [ ! -f "$torch_plugin" ] || [ ! -x "$torch_driver" ]; then
    fail "the libtorch example built no plugin or driver: $(ls "$tmp/torch-example-build")"
  fi
  needed=$(readelf -d "$torch_plugin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  echo "$needed" | grep -qx "libdtrain_libtorch.so.$version" ||
    fail "the libtorch plugin does not link libdtrain_libtorch.so.$version: $needed"
  grep -qa "dtrain-plugin-abi:dtrain $version;" "$torch_plugin" ||
    fail "the libtorch plugin does not carry the ABI tag of dtrain $version"
  # The adapter's headers, compiled together with the component's flags:
  # the plugin includes operator.hpp, which must include every other one
  # (a header added to the adapter and not included there fails this).
  for h in $(cd "$prefix/include" && find dtrain/libtorch -name '*.hpp' | sort); do
    [ "$h" = dtrain/libtorch/operator.hpp ] ||
      grep -q "^#include \"$h\"" "$prefix/include/dtrain/libtorch/operator.hpp" ||
      fail "$h is not included by dtrain/libtorch/operator.hpp, so no step compiles it"
  done
fi

# ---- 5. the driver on an embedded cluster ---------------------------------------
step "my_driver --epochs 1 (embedded cluster, 2 replicas)"
out=$(env -u LD_LIBRARY_PATH "$tmp/example-build/my_driver" --epochs 1 --replicas 2 2>&1) ||
  { echo "$out"; fail "my_driver failed"; }
echo "$out"
echo "$out" | grep -q "^cluster embedded, 2 replicas of spiral_mlp" || fail "not an embedded run"
hashes=$(echo "$out" | sed -n 's/^replica [01]: parameters hash \([0-9a-f]\{16\}\) .*$/\1/p')
[ "$(echo "$hashes" | wc -l)" = 2 ] || fail "expected two replicas' hashes, got: $hashes"
[ "$(echo "$hashes" | sort -u | wc -l)" = 1 ] || fail "the replicas' parameters differ: $hashes"

step "certificates from the installed dtrain: a cluster CA, a head, a node and a client certificate"
"$prefix/bin/dtrain" cert ca create > "$tmp/cert.log" || { cat "$tmp/cert.log"; fail "cert ca create"; }
for role in head node client; do
  "$prefix/bin/dtrain" cert create --$role >> "$tmp/cert.log" ||
    { cat "$tmp/cert.log"; fail "cert create --$role"; }
done
"$prefix/bin/dtrain" cert check > "$tmp/check.log" || { cat "$tmp/check.log"; fail "cert check"; }
[ "$(stat -c %a "$DTRAIN_HOME/tls/client-key.pem")" = 600 ] || fail "the client key is not mode 600"

step "my_driver --epochs 2 on the installed dtrain over mutual TLS: a head and two one-slot nodes"
# Each process finds its certificate in $DTRAIN_HOME/tls by its role.
"$prefix/bin/dtrain" start --head --port 0 --port-file "$tmp/head.address" --detach
head=$(cat "$tmp/head.address")
"$prefix/bin/dtrain" start --address "$head" --slots 1 --detach
"$prefix/bin/dtrain" start --address "$head" --slots 1 --detach
grep -q "mutual TLS as 'CN=head" "$DTRAIN_HOME"/head-*.log || fail "the head does not run TLS"
out=$(timeout 180 env -u LD_LIBRARY_PATH "$tmp/example-build/my_driver" --address "$head" \
        --epochs 2 --replicas 2 2>&1) || { echo "$out"; fail "my_driver on the TLS cluster failed"; }
echo "$out"
echo "$out" | grep -q "^cluster $head, 2 replicas of spiral_mlp" || fail "not run on $head"
# After each epoch: two replicas, on two different nodes, with equal parameters.
lines=$(echo "$out" | grep -c '^replica [01]: parameters hash')
[ "$lines" = 4 ] || fail "expected 2 epochs x 2 replicas' hashes, got $lines lines"
for epoch in 1 2; do
  block=$(echo "$out" | grep -A2 "^epoch $epoch:" | grep '^replica ')
  hashes=$(echo "$block" | sed -n 's/^replica [01]: parameters hash \([0-9a-f]\{16\}\) .*$/\1/p')
  nodes=$(echo "$block" | sed -n 's/^.*(node \([0-9]*\), .*$/\1/p')
  [ "$(echo "$hashes" | wc -l)" = 2 ] && [ "$(echo "$hashes" | sort -u | wc -l)" = 1 ] ||
    fail "epoch $epoch: the replicas' parameters differ: $hashes"
  [ "$(echo "$nodes" | sort -u | wc -l)" = 2 ] || fail "epoch $epoch: replicas not on two nodes: $nodes"
done
installs=$(grep -l "installed plugin" "$DTRAIN_HOME"/node-*.log 2> /dev/null | wc -l)
[ "$installs" = 2 ] || fail "expected both nodes to receive the plugin, $installs did"
shipped=$(ls "$DTRAIN_HOME/plugins" 2> /dev/null | grep -c '\.so$' || true)
[ "$shipped" -ge 1 ] || fail "no node kept the plugin under $DTRAIN_HOME/plugins"

fashion_mnist=${DTRAIN_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
if [ "$has_libtorch" = 1 ] && ! ls "$fashion_mnist"/train-images-idx3-ubyte* > /dev/null 2>&1; then
  echo "SKIPPED: the libtorch example's runs need Fashion-MNIST in $fashion_mnist"
elif [ "$has_libtorch" = 1 ]; then
  # 4000 training and 2000 test images: a few seconds an epoch per core.
  samples=(--train-samples 4000 --validation-samples 2000)
  step "libtorch_cnn_driver --epochs 1 on the TLS cluster (2 replicas, one per node)"
  out=$(timeout 150 env -u LD_LIBRARY_PATH "$torch_driver" --address "$head" --epochs 1 \
          --replicas 2 "${samples[@]}" 2>&1) || { echo "$out"; fail "libtorch_cnn_driver failed"; }
  echo "$out"
  echo "$out" | grep -q "^cluster $head, 2 replicas of libtorch_cnn" || fail "not run on $head"
  echo "$out" | grep -q "^epoch 1: train loss" || fail "no epoch reported"
  accuracy=$(echo "$out" | sed -n 's/^final validation accuracy \([0-9.]*\)$/\1/p')
  # Chance is 0.1 for ten classes.
  awk -v a="${accuracy:-0}" 'BEGIN { exit !(a > 0.3) }' ||
    fail "the CNN's validation accuracy '$accuracy' is not above chance (0.1) by a margin"
  loaded=$(grep -l "installed plugin.*libtorch_cnn" "$DTRAIN_HOME"/node-*.log 2> /dev/null | wc -l)
  [ "$loaded" = 2 ] || fail "expected both nodes to load the libtorch plugin, $loaded did"

  step "libtorch_cnn_driver --tune 2 --epochs 1 on the TLS cluster"
  out=$(timeout 150 env -u LD_LIBRARY_PATH "$torch_driver" --address "$head" --epochs 1 \
          --tune 2 "${samples[@]}" 2>&1) || { echo "$out"; fail "the libtorch sweep failed"; }
  echo "$out"
  # The tuner's own line as each trial ends.
  ended=$(echo "$out" | grep -c '^trial [0-9]* TERMINATED after 1 epochs$' || true)
  [ "$ended" = 2 ] || fail "expected 2 trials to end after 1 epoch, $ended did"
  echo "$out" | grep -q '^best: validation_accuracy = ' || fail "no best trial printed"
fi
"$prefix/bin/dtrain" stop > /dev/null

# ---- 6. a moved tree ----------------------------------------------------------
step "the prefix, moved"
mv "$prefix" "$tmp/moved"
out=$(env -u LD_LIBRARY_PATH "$tmp/moved/bin/dtrain" --version) || fail "the moved dtrain does not run"
[ "$out" = "dtrain $version" ] || fail "the moved dtrain printed '$out'"
out=$(PKG_CONFIG_PATH=$tmp/moved/$libdir/pkgconfig pkg-config --variable=libdir dtrain)
[ "$(cd "$out" && pwd)" = "$tmp/moved/$libdir" ] || fail "the moved dtrain.pc names libdir $out"

echo "PASS: dtrain $version installs and serves an out-of-tree project"
