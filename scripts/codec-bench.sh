#!/bin/bash
# codec-bench.sh: every codec's encode + decode of the same order beside JSON's,
# in the same package run, as ratios (codec time / JSON time; above 1 is
# slower than JSON), with the allocations of each. Three counts per benchmark;
# the ratio is the median of the three pairwise ratios. Run by `make bench`.
set -euo pipefail
GO=${GO:-go}
packages="./serialization/protobuf ./serialization/encryption ./patterns/schema/avro"
printf '%-28s %10s %10s %12s\n' "codec (encode+decode)" "ns/op" "allocs/op" "time / JSON"
for pkg in $packages; do
	"$GO" test -run '^$' -bench . -benchmem -count 3 "$pkg" | awk -v pkg="$pkg" '
		/^Benchmark/ {
			name = $1; sub(/^Benchmark/, "", name); sub(/-[0-9]+$/, "", name)
			n[name]++; ns[name, n[name]] = $3; allocs[name] = $7
			if (!(name in seen)) { seen[name] = 1; order[++count] = name }
		}
		function median3(a, b, c) { return a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b)) }
		END {
			for (i = 1; i <= count; i++) {
				name = order[i]
				if (name == "JSON") continue
				r1 = ns[name, 1] / ns["JSON", 1]; r2 = ns[name, 2] / ns["JSON", 2]; r3 = ns[name, 3] / ns["JSON", 3]
				t = median3(ns[name, 1], ns[name, 2], ns[name, 3])
				printf "%-28s %10d %10d %12.2f\n", name, t, allocs[name], median3(r1, r2, r3)
			}
			printf "%-28s %10d %10d %12s   (%s)\n", "JSON", median3(ns["JSON", 1], ns["JSON", 2], ns["JSON", 3]), allocs["JSON"], "1.00", pkg
		}'
done
