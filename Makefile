# The project's vocabulary. Each target is a thin wrapper: the real commands
# live in scripts/ so that CI and the README use exactly the same ones.
.PHONY: build run test test-race test-robustness test-robustness-fast test-robustness-default lint cluster clean bench-000 bench-000-quick bench-000-writes

build:
	go build -o bin/mure ./cmd/mure

run:
	go run ./cmd/mure serve --data ./data

test test-race:
	bash scripts/test.sh

# Randomized fault schedules of 20 s each, checked for linearizability
# (scripts/robustness.sh; each seed: 20 s of faults, start-up and the
# check): 20 seeds with the fast timings (the fault run and the same
# through forwarding), then 20 with the production ones (decision 0017).
test-robustness:
	bash scripts/robustness.sh all 20

test-robustness-fast:
	bash scripts/robustness.sh fast 20

test-robustness-default:
	bash scripts/robustness.sh default 20

# Paper 000 on the emulated-host testbed (root): the full grid (~1 hour) or
# a quick subset (~12 minutes). See docs/benchmarks.md.
bench-000:
	bash scripts/bench/000.sh full

bench-000-quick:
	bash scripts/bench/000.sh quick

# Own-set writes only, 4K and 64K, servers alternated 1,2,4,1,2,4 (~9 minutes).
bench-000-writes:
	bash scripts/bench/000.sh writes

lint:
	gofmt -l . && go vet ./...

cluster: build
	bash scripts/cluster.sh

clean:
	rm -rf bin data
