#!/usr/bin/env bash
# Regenerates the derived seed corpora of fuzz/corpus/ from a build of npuc:
#   bash fuzz/make-corpus.sh BUILD_DIR
# onnx: the bundled models plus every generated operator model (BUILD/generated-ops);
# target: the bundled presets; npy: the bundled inputs; tir: every lit test's functions, one
# file per `// -----` chunk; asm/decode: each preset's programs for the bundled TinyCNN cut into
# short pieces, as text and as binaries, behind the selector byte that picks the preset
# (fuzz/FuzzTargets.h: the order of presets() there); sim: the same binaries. package: small
# compiled packages.
# The hand-written seeds (names starting with `hand-`) are kept.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "$1" && pwd)"
npuc="$build/tools/npuc"
c="$root/fuzz/corpus"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for d in onnx target npy tir asm decode sim package; do
  mkdir -p "$c/$d"
  find "$c/$d" -type f ! -name 'hand-*' -delete
done

cp "$root"/models/*.onnx "$c/onnx/"
for m in "$build"/generated-ops/*/model.onnx; do
  cp "$m" "$c/onnx/op-$(basename "$(dirname "$m")").onnx"
done
cp "$root"/configs/*.yaml "$c/target/"
cp "$root"/models/*_input.npy "$root"/models/mlp_expected.npy "$c/npy/"

for f in $(find "$root/tests/lit" -name '*.tir' | sort); do
  base="$(basename "$(dirname "$f")")-$(basename "$f" .tir)"
  awk -v out="$c/tir/$base" 'BEGIN{n=0; file=out "-0.tir"} /^\/\/ -----/{n++; file=out "-" n ".tir"; next} {print > file}' "$f"
done

presets=(npu-base npu-int8 npu-large npu-32x32 npu-tiny npu-rtl vta-like)
for i in "${!presets[@]}"; do
  p="${presets[$i]}"
  sel="$(printf '\\x%02x' "$i")"
  if ! "$npuc" compile "$root/models/tinycnn.onnx" --target "$root/configs/$p.yaml" \
      -o "$tmp/$p.npub" >/dev/null 2>&1; then
    continue # a preset TinyCNN does not compile for gives no program seeds
  fi
  "$npuc" disasm "$tmp/$p.npub" | grep -v '^[#=]' | grep -v '^ *$' | grep -v ':$' > "$tmp/$p.s" || true
  head -72 "$tmp/$p.s" | split -l 12 -d -a 2 - "$tmp/$p-piece-"
  n=0
  for piece in "$tmp/$p"-piece-*; do
    [ -e "$piece" ] && [ "$n" -lt 6 ] || break
    printf "$sel" > "$c/asm/$p-$n.s"
    cat "$piece" >> "$c/asm/$p-$n.s"
    if "$npuc" asm "$piece" --target "$root/configs/$p.yaml" -o "$tmp/piece.bin" >/dev/null 2>&1; then
      printf "$sel" > "$c/decode/$p-$n.bin"
      cat "$tmp/piece.bin" >> "$c/decode/$p-$n.bin"
    fi
    n=$((n + 1))
  done
done

cp "$c"/decode/*.bin "$c/sim/" # the simulator harness reads the same encoding

for m in mlp dwnet; do
  "$npuc" compile "$root/models/$m.onnx" --target "$root/configs/npu-tiny.yaml" -o "$c/package/$m-npu-tiny.npub" >/dev/null
done
"$npuc" compile "$root/models/mlp.onnx" --target cpu -o "$c/package/mlp-cpu.npub" >/dev/null
du -sh "$c"/*
