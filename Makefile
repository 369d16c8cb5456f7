# The project's vocabulary. Each target is a thin wrapper: the real commands
# live in scripts/ so that CI and the README use exactly the same ones.
.PHONY: build run test test-race test-robustness lint cluster clean bench-000 bench-000-quick bench-000-writes

build:
	go build -o bin/mure ./cmd/mure

run:
	go run ./cmd/mure serve --data ./data

test test-race:
	bash scripts/test.sh

# 20 randomized fault schedules of 20 s each, checked for linearizability
# (about 8 minutes; bounded by -timeout).
# Fast timings (20 seeds), then the production ones (5 seeds of the fault
# run; decision 0017).
test-robustness:
	MURE_ROBUSTNESS_RUNS=20 go test -count=1 -timeout 40m -run 'TestLinearizabilityUnderFaults|TestLinearizabilityThroughForwarding' -v ./systest
	MURE_TIMING=default MURE_ROBUSTNESS_RUNS=5 go test -count=1 -timeout 20m -run 'TestLinearizabilityUnderFaults' -v ./systest

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
