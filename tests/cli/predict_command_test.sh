#!/bin/bash
# `dtrain predict` from the command line, on an embedded cluster: a one-epoch
# run of the shipped Fashion-MNIST experiment checkpoints, then its 10,000
# test rows are predicted by 2 replicas into a CSV in input order whose
# accuracy is the run's validation accuracy; a bad --input and a missing
# checkpoint are errors naming them.
#
#   predict_command_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
dtrain=$(cd "$1" && pwd)/bin/dtrain
source=$(cd "$2" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dtrain-predict-test.XXXXXX")
export DTRAIN_HOME=$tmp/home
unset DTRAIN_ADDRESS
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }

sed -e 's|^epochs: 15$|epochs: 1|' -e 's|^  epochs: 15 .*|  epochs: 1|' \
    -e "s|host_path: .*|host_path: $tmp/ckpt|" "$source/experiments/fashion_mnist.yaml" > "$tmp/fm.yaml"
timeout 300 "$dtrain" train "$tmp/fm.yaml" --embedded > "$tmp/train.log" 2>&1 ||
  { cat "$tmp/train.log"; fail "train"; exit 1; }
validation=$(sed -n 's/^validation: loss [0-9.]*, accuracy \([0-9.]*\).*/\1/p' "$tmp/train.log")
ckpt=$(find "$tmp/ckpt" -mindepth 2 -maxdepth 2 -type d | head -1)
timeout 300 "$dtrain" predict "$tmp/fm.yaml" --embedded --checkpoint "$ckpt" \
  --output "$tmp/pred.csv" > "$tmp/predict.log" 2>&1 || { cat "$tmp/predict.log"; fail "predict"; }
cat "$tmp/predict.log"
[ "$(wc -l < "$tmp/pred.csv")" = 10001 ] || fail "$(wc -l < "$tmp/pred.csv") lines, not 10001"
head -1 "$tmp/pred.csv" | grep -q '^index,target,prediction,output_0,.*,output_9$' || fail "header"
awk -F, 'NR > 1 && $1 != NR - 2 { bad = 1 } END { exit bad }' "$tmp/pred.csv" || fail "rows out of order"
ours=$(awk -F, 'NR > 1 { n++; if ($2 == $3) c++ } END { printf "%.4f", c / n }' "$tmp/pred.csv")
[ "$ours" = "$validation" ] || fail "the file's accuracy $ours is not the validation accuracy $validation"
grep -q "accuracy $validation" "$tmp/predict.log" || fail "predict did not print accuracy $validation"

"$dtrain" predict "$tmp/fm.yaml" --embedded --checkpoint "$ckpt" --input test \
  --output "$tmp/x.csv" > "$tmp/bad.log" 2>&1 && fail "--input test was accepted"
grep -q -- "--input test: no format known for this name" "$tmp/bad.log" || fail "bad input: $(cat "$tmp/bad.log")"
"$dtrain" predict "$tmp/fm.yaml" --embedded --checkpoint "$tmp/nowhere" \
  --output "$tmp/x.csv" > "$tmp/none.log" 2>&1 && fail "a missing checkpoint was accepted"
grep -q "$tmp/nowhere" "$tmp/none.log" || fail "missing checkpoint: $(cat "$tmp/none.log")"
[ -e "$tmp/x.csv" ] && fail "a failed predict left an output file"
[ "$failed" = 0 ] && echo "predict: all checks passed"
exit "$failed"
